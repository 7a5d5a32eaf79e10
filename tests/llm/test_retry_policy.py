"""The one retry policy shared by the LLM, MTurk and Prolific clients."""
from __future__ import annotations

import time

import pytest

from kernel.retry import RetryPolicy, TransientError, retry_after_seconds


def test_backoff_grows_exponentially_with_jitter_and_is_capped():
    policy = RetryPolicy(attempts=10, base=1.0, cap=8.0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (7, 8.0)]:
        pauses = [policy.delay(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= pause <= ceiling for pause in pauses)
        assert len(set(pauses)) > 1  # jittered, so concurrent callers spread out


def test_retry_after_wins_when_longer_and_is_capped():
    policy = RetryPolicy(attempts=3, base=0.1, cap=0.2, retry_after_max=5.0)
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=600.0) == 5.0
    assert policy.delay(1, retry_after=0.0) <= 0.1


def test_retry_after_ms_takes_precedence_over_seconds():
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "4"}) == 4.0
    assert retry_after_seconds(None) is None


def test_only_transient_errors_are_retried_and_attempts_are_bounded():
    policy = RetryPolicy(attempts=3, base=0.0)
    tries = []

    def flaky():
        tries.append(1)
        raise TransientError("HTTP 503", status=503)

    with pytest.raises(TransientError, match="503"):
        policy.call(flaky, describe="test")
    assert len(tries) == 3

    tries.clear()

    def refused():
        tries.append(1)
        raise ValueError("HTTP 400")

    with pytest.raises(ValueError):
        policy.call(refused, describe="test")
    assert len(tries) == 1


def test_server_requested_pause_is_slept():
    policy = RetryPolicy(attempts=2, base=0.0)
    tries = []

    def once_throttled():
        tries.append(time.monotonic())
        if len(tries) == 1:
            raise TransientError("HTTP 429", retry_after=0.3)
        return "ok"

    assert policy.call(once_throttled, describe="test") == "ok"
    assert tries[1] - tries[0] >= 0.3


def test_invalid_policies_are_refused():
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base=-1)


def test_client_libraries_do_not_retry_underneath(settings):
    """Each call is retried by one layer: botocore makes one attempt per call of ours."""
    from providers.mturk.provider import MTurkProvider

    settings.MTURK_MAX_ATTEMPTS = 4
    provider = MTurkProvider(endpoint="http://127.0.0.1:9", credentials=("k", "s"), retry_pause=0)
    assert provider.client.meta.config.retries["total_max_attempts"] == 1
    assert provider.retry_policy.attempts == 4


@pytest.mark.django_db(transaction=True)
def test_a_server_requested_pause_holds_back_every_request_of_the_client(make_client, fake_server):
    """A 429 with Retry-After concerns the whole server: requests started after it wait too."""
    from llm.client import chat_request

    # The 429 is answered on arrival, the other first request 0.3 s later: the pause is known
    # before any slot frees up.
    fake_server.latency = 0.3
    fake_server.fail_next(1, status=429, retry_after=1)
    client = make_client(max_concurrency=2)
    results = client.run_batch([chat_request(f"q{i}") for i in range(4)])
    assert all(result.ok for result in results)
    arrivals = sorted(request.received_at for request in fake_server.completion_requests)
    first = arrivals[0]
    # Two start at once (one is refused with 429); every later request waits out the pause.
    assert len(arrivals) == 5
    assert all(arrival - first >= 0.95 for arrival in arrivals[2:])


def test_connection_errors_are_transient_when_nothing_was_sent_or_the_call_is_idempotent():
    import httpx
    from botocore import exceptions as botocore

    from kernel.retry import ANSWER_LOST, NOT_SENT, connection_failure, transient_connection_failure

    request = httpx.Request("POST", "https://api.example.org/")
    cases = [
        (httpx.ConnectError("refused", request=request), NOT_SENT),
        (httpx.ConnectTimeout("slow", request=request), NOT_SENT),
        (httpx.RemoteProtocolError("closed", request=request), ANSWER_LOST),
        (httpx.ReadTimeout("slow", request=request), ANSWER_LOST),
        (botocore.EndpointConnectionError(endpoint_url="https://mturk"), NOT_SENT),
        (botocore.ConnectTimeoutError(endpoint_url="https://mturk"), NOT_SENT),
        (botocore.ConnectionClosedError(endpoint_url="https://mturk"), ANSWER_LOST),
        (botocore.ReadTimeoutError(endpoint_url="https://mturk"), ANSWER_LOST),
        (botocore.NoCredentialsError(), None),
        (ValueError("not a connection error"), None),
    ]
    for error, kind in cases:
        assert connection_failure(error) == kind, error
        assert transient_connection_failure(error, idempotent=True) is (kind is not None), error
        assert transient_connection_failure(error, idempotent=False) is (kind == NOT_SENT), error
