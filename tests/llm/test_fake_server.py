"""The fake server speaks the real wire format and sustains concurrent slow requests."""
from __future__ import annotations

import json
import threading
import urllib.request

import openai
import pytest

from fakes.openai_server import FakeOpenAIServer, tokenize

from .conftest import HeldAnswers


def post(url: str, body: dict) -> tuple[int, dict, object]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


@pytest.fixture
def server():
    with FakeOpenAIServer() as running:
        yield running


def test_sdk_parses_chat_and_models(server):
    sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.object == "chat.completion" and reply.model == "m"
    assert reply.choices[0].message.content == "You said: hi"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert [model.id for model in sdk.models.list()] == ["fake-model"]


def test_sdk_parses_completion_logprobs(server):
    sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = sdk.completions.create(model="m", prompt="A cat sat.", echo=True, logprobs=2, max_tokens=2)
    choice = reply.choices[0]
    assert choice.text == "A cat sat. You said" and choice.finish_reason == "length"
    assert choice.logprobs.tokens == ["A", " cat", " sat", ".", " You", " said"]
    assert choice.logprobs.token_logprobs[0] is None
    assert choice.logprobs.text_offset == [0, 1, 5, 9, 10, 14]
    assert all(len(top) == 2 for top in choice.logprobs.top_logprobs[1:])
    # Deterministic, so a perplexity ranking on the fake is reproducible.
    again = sdk.completions.create(model="m", prompt="A cat sat.", echo=True, logprobs=2, max_tokens=2)
    assert again.choices[0].logprobs.token_logprobs == choice.logprobs.token_logprobs


def test_chat_logprobs(server):
    sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], logprobs=True, top_logprobs=2
    )
    content = reply.choices[0].logprobs.content
    assert "".join(item.token for item in content) == "You said: hi"
    assert all(len(item.top_logprobs) == 2 for item in content)


def test_tokenize_covers_the_whole_text():
    text = "  Hello, world!\n  It's 5 o'clock. "
    assert "".join(tokenize(text)) == text


def test_invalid_requests_get_openai_style_errors(server):
    status, _, body = post(server.base_url + "/chat/completions", {"model": "m", "messages": []})
    assert status == 400 and body["error"]["param"] == "messages"
    status, _, body = post(server.base_url + "/completions", {"prompt": "x"})
    assert status == 400 and body["error"]["param"] == "model"


def test_scripted_failures_carry_retry_after(server):
    server.fail_next(1, status=429, retry_after=3)
    chat = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    status, headers, body = post(server.base_url + "/chat/completions", chat)
    assert status == 429 and headers["Retry-After"] == "3"
    assert body["error"]["code"] == "rate_limit_exceeded"
    status, _, _ = post(server.base_url + "/chat/completions", chat)
    assert status == 200


def test_control_endpoints(server):
    post(server.base_url + "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]})
    base = server.base_url.removesuffix("/v1")
    with urllib.request.urlopen(base + "/_fake/stats") as response:
        assert json.loads(response.read())["by_path"] == {"/v1/chat/completions": 1}
    assert post(base + "/_fake/fail", {"count": 2, "status": 500})[2] == {"scripted_faults_left": 2}
    post(base + "/_fake/reset", {})
    assert server.requests == [] and server.scripted_faults_left == 0


def test_serves_48_requests_at_once():
    """48 requests held in the server at the same time all get their answers: a batch running 32 at
    once (bench/llm_batch.py) is served in parallel, not one by one."""
    with FakeOpenAIServer() as server:
        held = HeldAnswers(server)
        statuses = []

        def one(i: int) -> None:
            body = {"model": "m", "messages": [{"role": "user", "content": str(i)}]}
            statuses.append(post(server.base_url + "/chat/completions", body)[0])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(48)]
        try:
            for thread in threads:
                thread.start()
            held.wait_until(lambda h: h.arrived == 48, "48 requests in the server at once")
            assert server.in_flight == 48
        finally:
            held.let_all_go()
            for thread in threads:
                thread.join()
        peak = server.peak_in_flight
    assert statuses == [200] * 48
    assert peak == 48
