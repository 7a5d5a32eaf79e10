"""Adapting to a server's rate limits: the header parsing, the controller's arithmetic (driven by
a hand-set clock, never by waiting), the fake server's limits, and the client against them."""
from __future__ import annotations

import json
import urllib.request

import pytest

from fakes.openai_server import FakeOpenAIServer, RateLimits, charged_tokens
from kernel.retry import RateLimitHeaders, parse_duration, rate_limit_headers
from llm.client import chat_request
from llm.rate_limits import DEFAULT_INITIAL_CONCURRENCY, RateController

from .conftest import HeldAnswers


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- headers ------------------------------------------------------------------------------------


def test_reset_durations_and_headers_are_read_as_openai_writes_them():
    assert parse_duration("6m0s") == 360.0 and parse_duration("1.5s") == 1.5
    assert parse_duration("20ms") == pytest.approx(0.02) and parse_duration("1h2m3.5s") == 3723.5
    assert parse_duration("2") == 2.0 and parse_duration(None) is None
    assert parse_duration("soon") is None and parse_duration("5sx") is None and parse_duration("") is None
    headers = rate_limit_headers({
        "x-ratelimit-limit-requests": "3000", "x-ratelimit-remaining-requests": "2999",
        "x-ratelimit-reset-requests": "20ms", "x-ratelimit-limit-tokens": "250000",
        "x-ratelimit-remaining-tokens": "-4", "x-ratelimit-reset-tokens": "later",
    })
    assert headers == RateLimitHeaders(limit_requests=3000, remaining_requests=2999, reset_requests=0.02,
                                       limit_tokens=250000, remaining_tokens=None, reset_tokens=None)
    assert rate_limit_headers({}).empty and rate_limit_headers(None).empty


# --- the controller -----------------------------------------------------------------------------


def test_requests_are_paced_at_the_per_minute_limit_from_the_headers():
    clock = Clock()
    controller = RateController(max_concurrency=8, clock=clock)
    assert controller.book().start == clock.now  # nothing known yet: no pacing
    controller.on_success(RateLimitHeaders(limit_requests=600, remaining_requests=500))  # 10 per second
    starts = [controller.book().start for _ in range(4)]
    assert starts == pytest.approx([100.0, 100.1, 100.2, 100.3])
    clock.now = 200.0  # idle for a while: the next one goes at once
    assert controller.book().start == 200.0


def test_tokens_are_paced_by_the_learned_ratio_of_real_to_estimated_prompt_tokens():
    clock = Clock()
    controller = RateController(max_concurrency=8, clock=clock)
    controller.on_success(RateLimitHeaders(limit_requests=6000, limit_tokens=60_000),  # 100 req/s, 1000 tok/s
                          prompt_estimate=1000, prompt_tokens=250)
    assert controller.token_ratio == 0.25
    first = controller.book(prompt_estimate=1000, completion_tokens=50)
    second = controller.book(prompt_estimate=1000, completion_tokens=50)
    assert first.tokens == 300 and second.start - first.start == pytest.approx(0.3)  # tokens bind, not requests
    controller.on_success(prompt_estimate=1000, prompt_tokens=500)  # a moving average, not the last value
    assert controller.token_ratio == pytest.approx(0.8 * 0.25 + 0.2 * 0.5)


def test_an_empty_bucket_in_the_headers_holds_new_starts_until_it_refills():
    clock = Clock()
    controller = RateController(max_concurrency=8, clock=clock)
    controller.on_success(RateLimitHeaders(limit_requests=600, remaining_requests=0))
    assert controller.book().start == pytest.approx(100.1)  # one request's refill at 10/s
    other = RateController(max_concurrency=8, clock=clock)
    other.on_success(RateLimitHeaders(remaining_requests=0, reset_requests=2.0))  # no limit: wait for reset
    assert other.book().start == pytest.approx(102.0)


def test_slow_start_then_multiplicative_decrease_and_additive_increase():
    controller = RateController(max_concurrency=16, clock=Clock())
    assert controller.concurrency == DEFAULT_INITIAL_CONCURRENCY == 4
    for _ in range(3):
        controller.on_success()
    assert controller.concurrency == 7  # +1 per success until the first 429
    for _ in range(20):
        controller.on_success()
    assert controller.concurrency == 16  # never above the bound
    controller.on_rate_limited(RateLimitHeaders(limit_requests=600))
    assert (controller.concurrency, controller.factor, controller.rate_limited) == (8, 0.75, 1)
    assert controller.book().start == pytest.approx(100.0)
    assert controller.book().start == pytest.approx(100.0 + 0.1 / 0.75)  # paced below the limit now
    for _ in range(8):
        controller.on_success()
    assert controller.concurrency == 8 and controller.limit == pytest.approx(8.96, abs=0.05)  # ~1 per round trip
    assert controller.factor == pytest.approx(0.83)
    for _ in range(4):
        controller.on_rate_limited()
    assert controller.concurrency == 1  # never below min_concurrency
    assert controller.factor == pytest.approx(0.83 * 0.75 ** 4)


def test_without_adaptation_the_concurrency_is_fixed_and_nothing_is_paced():
    controller = RateController(max_concurrency=12, adaptive=False, clock=Clock())
    controller.on_success(RateLimitHeaders(limit_requests=60, remaining_requests=0))
    controller.on_rate_limited()
    assert controller.concurrency == 12 and controller.rate_limited == 1
    assert [controller.book().start for _ in range(3)] == [100.0, 100.0, 100.0]
    with pytest.raises(ValueError):
        RateController(max_concurrency=0)


# --- the fake server's limits -------------------------------------------------------------------


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


def test_fake_server_enforces_requests_and_tokens_per_minute_with_the_real_headers():
    clock = Clock()
    limits = RateLimits(rpm=120, tpm=6000, burst_seconds=1.5, clock=clock)  # 3 requests, 150 tokens at once
    body = {"model": "m", "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 20}
    assert charged_tokens("chat", body) == 3 + 20
    with FakeOpenAIServer(rate_limits=limits) as server:
        url = server.base_url + "/chat/completions"
        answers = [post(url, body) for _ in range(4)]
        assert [status for status, _ in answers] == [200, 200, 200, 429]
        ok_headers = answers[0][1]
        assert ok_headers["x-ratelimit-limit-requests"] == "120" and ok_headers["x-ratelimit-limit-tokens"] == "6000"
        assert ok_headers["x-ratelimit-remaining-requests"] == "2"
        assert ok_headers["x-ratelimit-remaining-tokens"] == str(150 - 23)
        assert parse_duration(ok_headers["x-ratelimit-reset-requests"]) == pytest.approx(0.5)
        refused = answers[3][1]
        assert refused["x-ratelimit-remaining-requests"] == "0"
        assert refused["retry-after-ms"] == "500" and refused["retry-after"] == "1"  # 1 request at 2/s
        assert len(server.completion_requests) == 4 and server.stats()["rate_limits"] == {
            "accepted": 3, "rate_limited": 1, "charged_tokens": 69}

        clock.now += 0.5  # one request has refilled
        assert post(url, body)[0] == 200 and post(url, body)[0] == 429
        clock.now += 10  # tokens: a request larger than what is left is refused until they refill
        big = {**body, "max_tokens": 140}
        assert post(url, big)[0] == 200 and post(url, big)[0] == 429
        assert parse_duration(post(url, body)[1]["x-ratelimit-reset-tokens"]) > 0


# --- the client against a limited server ------------------------------------------------------


@pytest.mark.django_db
def test_client_learns_the_limits_and_every_call_succeeds(make_client, fake_server):
    fake_server.rate_limits = RateLimits(rpm=60_000, tpm=6_000_000)  # generous: the test measures no time
    client = make_client(max_concurrency=16)
    results = client.run_batch([chat_request(f"Describe picture {i} in detail.", max_tokens=64) for i in range(40)])
    assert all(result.ok for result in results)
    controller = client.rate_controller
    assert controller.requests.rate == 1000 and controller.tokens.rate == 100_000
    assert 0 < controller.token_ratio < 1  # byte-based estimates are upper bounds
    assert controller.concurrency == 16  # slow start reached the bound without a 429


@pytest.mark.django_db
def test_client_halves_its_concurrency_on_429_and_retries(make_client, fake_server):
    held = HeldAnswers(fake_server, answer_first=1 << 30)
    fake_server.fail_next(2, status=429, retry_after=0)
    client = make_client(max_concurrency=8)
    results = client.run_batch([chat_request(f"q{i}") for i in range(6)])
    assert all(result.ok for result in results) and results.stats.retries == 2
    assert client.rate_controller.rate_limited == 2
    assert client.rate_controller.concurrency < 8 and client.rate_controller.factor < 1
    assert held.answered == 6
