"""The client layer through the real openai SDK against the fake server."""
from __future__ import annotations

import asyncio
import base64
import email.utils
import os
import signal
import threading
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import openai
import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from fakes.openai_server import IMAGE_TOKENS, Reply, tokenize
from llm.calls import BudgetExceeded, LLMCallFailed
from llm.client import (
    LLMClient,
    LLMNotConfigured,
    chat_request,
    complete,
    completion,
    retry_after_seconds,
    run_batch,
)
from llm.models import LLMCall, LLMRun
from llm.selectors import run_cost_from_calls
from llm.services import create_run, create_template_version, render_template

from .conftest import MODEL, HeldAnswers, expected_cost

# Database work runs in the calling thread (see LLMClient.run_batch), so most tests can use the
# usual rolled-back transaction; the ones about what survives an interruption commit for real.
pytestmark = pytest.mark.django_db

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def sent_bodies(server) -> list[dict]:
    return [request.body for request in server.completion_requests]


def test_prompt_system_and_images_reach_the_server(llm_client, fake_server, tmp_path):
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    result = llm_client.complete(
        "What is in these images?",
        system="You are careful.",
        images=["https://example.org/cat.jpg", photo, PNG],
        temperature=0,
        purpose="irr_review",
    )

    assert result.ok, result.error
    [request] = fake_server.completion_requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer test-key"
    body = request.body
    assert body["model"] == MODEL and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "You are careful."}
    parts = body["messages"][1]["content"]
    assert parts[0] == {"type": "text", "text": "What is in these images?"}
    urls = [part["image_url"]["url"] for part in parts[1:]]
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert urls == ["https://example.org/cat.jpg", data_url, data_url]
    assert result.text == "You said: What is in these images? [3 images]"

    call = LLMCall.objects.get()
    assert call.status == LLMCall.Status.OK and call.purpose == "irr_review"
    # Inline images are stored as a digest, not as megabytes of base64.
    stored_urls = [part["image_url"]["url"] for part in call.request["messages"][1]["content"][1:]]
    assert stored_urls[0] == "https://example.org/cat.jpg"
    assert stored_urls[1].startswith("data:image/png;sha256=") and "base64" not in stored_urls[1]


def test_images_are_part_of_the_cache_key(llm_client, fake_server):
    other_png = PNG[:-1] + b"\x00"
    first = llm_client.complete("Describe.", images=[PNG])
    second = llm_client.complete("Describe.", images=[other_png])
    again = llm_client.complete("Describe.", images=[PNG])
    assert first.request_hash != second.request_hash
    assert not second.cached and again.cached
    assert len(fake_server.completion_requests) == 2


def test_429_with_retry_after_is_retried_and_recorded_once(llm_client, fake_server):
    fake_server.fail_next(1, status=429, retry_after=1)
    started = time.monotonic()
    result = llm_client.complete("hello")
    waited = time.monotonic() - started

    assert result.ok and result.attempts == 2
    assert waited >= 1.0, "Retry-After: 1 must be honoured"
    assert len(fake_server.completion_requests) == 2
    call = LLMCall.objects.get()
    assert (call.status, call.attempts, call.http_status) == ("ok", 2, 200)


def test_500_then_success_is_retried(llm_client, fake_server):
    fake_server.fail_next(2, status=500)
    result = llm_client.complete("hello")
    assert result.ok and result.attempts == 3
    assert LLMCall.objects.count() == 1


def test_retries_give_up_after_max_retries(make_client, fake_server):
    client = make_client(max_retries=2)
    fake_server.fail_next(5, status=503)
    result = client.complete("hello")
    assert result.status == "failed" and result.attempts == 3
    assert result.http_status == 503 and "503" in result.error
    assert len(fake_server.completion_requests) == 3
    with pytest.raises(LLMCallFailed):
        result.raise_for_error()


def test_non_retryable_status_fails_at_once(llm_client, fake_server):
    fake_server.fail_next(1, status=400, message="bad things")
    result = llm_client.complete("hello")
    assert result.status == "failed" and result.attempts == 1
    assert result.error == "HTTP 400: bad things"
    assert LLMCall.objects.get().status == LLMCall.Status.FAILED


def test_wrong_key_is_a_failure_and_the_key_is_never_stored(make_client, fake_server):
    result = make_client(api_key="wrong-secret-key").complete("hello")
    assert result.status == "failed" and result.http_status == 401
    call = LLMCall.objects.get()
    stored = " ".join(str(value) for value in LLMCall.objects.values().get().values())
    assert "wrong-secret-key" not in stored and "test-key" not in stored
    assert call.error.startswith("HTTP 401")


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    when = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 28 <= retry_after_seconds({"retry-after": when}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_retry_after_as_http_date_is_honoured(llm_client, fake_server):
    started = time.monotonic()
    when = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=2), usegmt=True)
    fake_server.fail_next(1, status=429, retry_after=when)
    assert llm_client.complete("hello").ok
    # HTTP dates have whole seconds: the date given is at least 1 s after ``started``. A lower
    # bound only; a loaded machine makes the wait longer, never shorter.
    assert time.monotonic() - started >= 0.99


@pytest.mark.parametrize("kind", ["invalid_json", "no_choices", "empty_choices", "not_object", "no_message", "html"])
def test_malformed_responses_are_failures_not_crashes(llm_client, fake_server, kind):
    fake_server.malform_next(1, kind=kind)
    results = llm_client.run_batch([chat_request(f"question {i}") for i in range(4)])

    failed = [r for r in results if not r.ok]
    assert len(failed) == 1 and failed[0].error.startswith("malformed response")
    assert sum(r.ok for r in results) == 3
    assert LLMCall.objects.filter(status="failed").count() == 1
    assert LLMCall.objects.filter(status="ok").count() == 3
    # A failure is not cached: asking again sends exactly that request again.
    fake_server.reset()
    again = llm_client.run_batch([chat_request(f"question {i}") for i in range(4)])
    assert all(r.ok for r in again)
    assert [b["messages"][0]["content"] for b in sent_bodies(fake_server)] == [failed[0].request.messages[0]["content"]]


@pytest.mark.django_db(transaction=True)
def test_rerun_after_interruption_sends_no_completed_request_again(make_client, fake_server):
    fake_server.latency = 0.05
    client = make_client(max_concurrency=4)
    requests = [chat_request(f"item {i}", purpose="interrupt") for i in range(40)]

    class Stop(Exception):
        pass

    seen = []

    def stop_after_ten(result):
        seen.append(result)
        if len(seen) == 10:
            raise Stop

    with pytest.raises(Stop):
        client.run_batch(requests, progress=stop_after_ten)

    first_run_sent = len(fake_server.completion_requests)
    assert first_run_sent < 40, "the interruption must stop the batch early"
    stored = set(LLMCall.objects.filter(status="ok").values_list("request_hash", flat=True))
    assert len(stored) >= 10

    fake_server.reset()
    results = client.run_batch(requests)
    assert all(r.ok for r in results)
    resent = {r.request_hash for r in results if not r.cached}
    assert not (resent & stored), "a completed request was sent again"
    assert len(fake_server.completion_requests) == 40 - len(stored)
    assert sum(r.cached for r in results) == len(stored)
    assert LLMCall.objects.filter(status="ok").count() == 40


def test_rerun_of_a_finished_batch_sends_nothing(llm_client, fake_server):
    requests = [chat_request(f"item {i}") for i in range(10)]
    first = llm_client.run_batch(requests)
    second = llm_client.run_batch(requests)
    assert len(fake_server.completion_requests) == 10
    assert all(r.cached and r.cost_usd == 0 for r in second)
    assert [r.text for r in second] == [r.text for r in first]
    assert [r.call_id for r in second] == [r.call_id for r in first]
    assert second.stats.sent == 0 and second.stats.cache_hits == 10


def test_duplicates_in_one_batch_are_sent_once(llm_client, fake_server):
    results = llm_client.run_batch([chat_request("same")] * 3 + [chat_request("other")])
    assert len(fake_server.completion_requests) == 2
    assert [r.cached for r in results] == [False, True, True, False]
    assert len({r.text for r in results[:3]}) == 1


def test_any_parameter_changes_the_cache_key(llm_client, fake_server):
    llm_client.complete("same", temperature=0)
    llm_client.complete("same", temperature=1)
    llm_client.complete("same", temperature=0, seed=3)
    llm_client.complete("same", temperature=0, top_k=5)  # a vLLM extension the SDK does not know: extra_body
    bodies = sent_bodies(fake_server)
    assert len(bodies) == 4
    assert bodies[3]["top_k"] == 5


def test_token_and_cost_accounting(llm_client, fake_server):
    run = create_run(name="accounting")
    prompt = "Consider an image depicted by: 'a red bus'. Now, briefly follow this instruction."
    result = llm_client.complete(prompt, run=run, max_tokens=5)

    prompt_tokens = len(tokenize(prompt))
    reply_tokens = tokenize(f"You said: {prompt}")[:5]
    assert (result.prompt_tokens, result.completion_tokens) == (prompt_tokens, 5)
    assert result.text == "".join(reply_tokens)
    assert result.cost_usd == expected_cost(prompt_tokens, 5)
    call = LLMCall.objects.get()
    assert (call.prompt_tokens, call.completion_tokens, call.cost_usd) == (prompt_tokens, 5, expected_cost(prompt_tokens, 5))
    assert call.latency_seconds > 0 and call.run == run
    run.refresh_from_db()
    assert run.spent_usd == expected_cost(prompt_tokens, 5) == run_cost_from_calls(run)
    assert run.status == LLMRun.Status.COMPLETED


def test_usage_reported_by_the_server_is_what_is_charged(llm_client, fake_server):
    fake_server.responder = lambda endpoint, body: Reply("fixed", prompt_tokens=1000, completion_tokens=250)
    result = llm_client.complete("anything", images=[PNG])
    assert (result.prompt_tokens, result.completion_tokens) == (1000, 250)
    assert result.cost_usd == Decimal("0.0045")  # 1000 * $2/M + 250 * $10/M


def test_image_tokens_are_counted_by_the_server(llm_client, fake_server):
    result = llm_client.complete("two words", images=[PNG, PNG])
    assert result.prompt_tokens == 2 + 2 * IMAGE_TOKENS


def test_unpriced_model_records_no_cost(make_client, fake_server):
    result = make_client(prices={}).complete("hello")
    assert result.ok and result.cost_usd is None
    assert LLMCall.objects.get().cost_usd is None


def test_template_version_is_recorded_with_the_call(llm_client, fake_server):
    create_template_version(name="visit-reference", text="Consider an image depicted by: '{caption}'.")
    create_template_version(name="visit-reference", text="An image shows: '{caption}'. {instruction}")
    prompt = render_template("visit-reference", caption="a dog", instruction="Name the animal.")
    result = llm_client.complete(prompt, purpose="reference")
    call = LLMCall.objects.get(pk=result.call_id)
    assert (call.template_name, call.template_version) == ("visit-reference", 2)
    assert fake_server.completion_requests[0].body["messages"][0]["content"] == "An image shows: 'a dog'. Name the animal."

    older = render_template("visit-reference", 1, caption="a dog")
    result = llm_client.complete(older)
    assert LLMCall.objects.get(pk=result.call_id).template_version == 1


@pytest.mark.django_db(transaction=True)
def test_budget_cap_stops_the_run_before_it_is_exceeded(make_client, fake_server):
    client = make_client(max_concurrency=8)
    cap = Decimal("0.0040")
    run = create_run(name="capped", budget_usd=cap)
    requests = [chat_request(f"Please summarise document number {i} briefly.", max_tokens=20) for i in range(40)]
    progress_seen = []
    results = client.run_batch(requests, run=run, progress=progress_seen.append)

    run.refresh_from_db()
    ok = [r for r in results if r.ok]
    refused = [r for r in results if r.status == "budget_exceeded"]
    assert ok and refused, "the cap must allow some requests and refuse the rest"
    assert len(ok) + len(refused) == 40 and len(progress_seen) == 40
    assert run.spent_usd <= cap
    assert run.spent_usd == sum(r.cost_usd for r in ok) == run_cost_from_calls(run)
    assert run.status == LLMRun.Status.BUDGET_EXCEEDED
    assert len(fake_server.completion_requests) == len(ok)
    assert "budget of $0.004" in refused[0].error and "not sent" in refused[0].error
    with pytest.raises(BudgetExceeded):
        refused[0].raise_for_error()
    # Each request costs about $0.0003, so a cap of $0.004 should not stop far below it.
    assert run.spent_usd > cap / 2

    # Raising the cap lets a re-run finish the work without paying again for what is done.
    fake_server.reset()
    LLMRun.objects.filter(pk=run.pk).update(budget_usd=Decimal("1"))
    run.refresh_from_db()
    rerun = client.run_batch(requests, run=run)
    assert all(r.ok for r in rerun)
    assert len(fake_server.completion_requests) == len(refused)
    run.refresh_from_db()
    assert run.status == LLMRun.Status.COMPLETED and run.spent_usd == run_cost_from_calls(run)


def test_budget_too_small_for_one_request_sends_nothing(llm_client, fake_server):
    run = create_run(name="tiny", budget_usd="0.000001")
    result = llm_client.complete("hello", run=run)
    assert result.status == "budget_exceeded"
    assert fake_server.completion_requests == []
    run.refresh_from_db()
    assert run.spent_usd == 0 and run.status == LLMRun.Status.BUDGET_EXCEEDED


def test_budget_needs_a_price_for_the_model(make_client, fake_server):
    run = create_run(name="unpriced", budget_usd=1)
    with pytest.raises(LLMNotConfigured, match="no price for: mystery-model"):
        make_client().complete("hello", model="mystery-model", run=run)
    assert fake_server.completion_requests == []


@pytest.mark.parametrize("model", ["some-model", ""])
def test_missing_configuration_fails_fast_with_the_variables_to_set(model, monkeypatch):
    client = LLMClient(base_url="", api_key="", model=model)

    def no_connection(*args, **kwargs):
        raise AssertionError("an SDK client was built before the configuration was checked")

    monkeypatch.setattr(openai, "AsyncOpenAI", no_connection)  # fast failure: nothing is tried
    with pytest.raises(LLMNotConfigured) as error:
        client.complete("hello")
    message = str(error.value)
    for variable in ("LLM_BASE_URL", "OPENAI_BASE_URL", "LLM_API_KEY", "OPENAI_API_KEY", "LLM_MODEL"):
        assert variable in message
    assert not LLMCall.objects.exists()


def test_missing_configuration_still_serves_the_cache(llm_client, fake_server):
    llm_client.complete("asked before")
    offline = LLMClient(base_url="", api_key="", model=MODEL)
    assert offline.complete("asked before").cached
    with pytest.raises(LLMNotConfigured):
        offline.complete("never asked")


def test_missing_model_names_llm_model(fake_server):
    client = LLMClient(base_url=fake_server.base_url, api_key="", model="")
    with pytest.raises(LLMNotConfigured, match="LLM_MODEL"):
        client.complete("hello")


def test_module_functions_read_django_settings(settings, fake_server):
    settings.LLM_BASE_URL = fake_server.base_url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MODEL = "cheap-model"
    settings.LLM_PRICES = {"cheap-model": {"input": 0.15, "output": 0.6}}
    result = complete("hello there")
    assert result.ok and result.model == "cheap-model"
    assert result.cost_usd == (Decimal("0.15") * result.prompt_tokens + Decimal("0.6") * result.completion_tokens) / 10**6
    assert run_batch([chat_request("hello there")])[0].cached


def test_keyless_server_gets_no_authorization_header(fake_server):
    fake_server.api_key = None
    result = LLMClient(base_url=fake_server.base_url, api_key="", model=MODEL).complete("hi")
    assert result.ok
    assert "Authorization" not in fake_server.completion_requests[0].headers


def test_completions_with_echo_returns_prompt_logprobs(llm_client, fake_server):
    prompt = "Review: the photo shows a quiet harbour at dawn."
    result = llm_client.completion(prompt, echo=True, logprobs=1, max_tokens=0, purpose="irr_perplexity")

    assert result.ok, result.error
    body = fake_server.completion_requests[0].body
    assert fake_server.completion_requests[0].path == "/v1/completions"
    assert (body["prompt"], body["echo"], body["logprobs"], body["max_tokens"]) == (prompt, True, 1, 0)
    logprobs = result.logprobs
    assert "".join(logprobs["tokens"]) == prompt == result.text
    assert logprobs["token_logprobs"][0] is None
    assert all(lp < 0 for lp in logprobs["token_logprobs"][1:])
    assert logprobs["text_offset"][1] == len(logprobs["tokens"][0])
    assert result.completion_tokens == 0 and result.prompt_tokens == len(tokenize(prompt))
    call = LLMCall.objects.get()
    assert call.endpoint == "completions" and call.response["choices"][0]["logprobs"] == logprobs
    # Same cache and accounting as chat calls.
    assert llm_client.completion(prompt, echo=True, logprobs=1, max_tokens=0).cached
    assert result.cost_usd == expected_cost(result.prompt_tokens, 0)


def test_module_completion_function(settings, fake_server):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_server.base_url, "test-key", MODEL
    result = completion("Once upon", max_tokens=3)
    assert result.ok and result.text == "".join(tokenize(" You said: Once upon")[:3])


def test_default_max_tokens_is_sent_when_the_request_sets_none(make_client, fake_server):
    make_client(default_max_tokens=77).complete("hello")
    assert fake_server.completion_requests[0].body["max_tokens"] == 77


def test_batch_keeps_order_and_reports_progress(make_client, fake_server):
    fake_server.latency = 0.02
    client = make_client(max_concurrency=16)
    requests = [chat_request(f"number {i}") for i in range(50)]
    seen = []
    results = client.run_batch(requests, progress=seen.append)
    assert [r.text for r in results] == [f"You said: number {i}" for i in range(50)]
    assert len(seen) == 50
    assert results.stats.sent == 50 and results.stats.ok == 50
    assert results.stats.db_flushes < 50, "rows finished together are written together"


def test_concurrency_is_bounded_and_used(make_client, fake_server):
    """With the concurrency fixed (no rate-limit adaptation), the client keeps exactly
    ``max_concurrency`` requests in flight. Answers are let go one at a time, each only once 32
    requests wait in the server: a client that sends fewer at once gets stuck, one that sends more
    is seen by the server's in-flight count. (The adaptive bound: tests/llm/test_rate_limits.py.)"""
    held = HeldAnswers(fake_server)
    total, bound = 96, 32
    stuck: list[AssertionError] = []

    def answer_one_at_a_time() -> None:
        try:
            for answered in range(total):
                in_flight = min(bound, total - answered)
                held.wait_until(lambda h: h.waiting >= in_flight, f"{in_flight} requests in flight")
                held.let_one_go()
        except AssertionError as error:
            stuck.append(error)
            held.let_all_go()

    feeder = threading.Thread(target=answer_one_at_a_time, daemon=True)
    feeder.start()
    results = make_client(max_concurrency=bound, adaptive_concurrency=False).run_batch(
        [chat_request(f"n{i}") for i in range(total)])
    feeder.join()
    assert not stuck, stuck[0]
    assert all(r.ok for r in results)
    assert fake_server.peak_in_flight == bound
    assert held.arrived == len(fake_server.completion_requests) == total


def test_connection_errors_are_retried_then_recorded(fake_server):
    fake_server.stop()
    client = LLMClient(base_url=fake_server.base_url, api_key="k", model=MODEL, max_retries=1, backoff_base=0.01)
    result = client.complete("hello")
    assert result.status == "failed" and result.attempts == 2
    assert result.error.startswith("APIConnectionError")
    assert LLMCall.objects.get().status == "failed"


def test_streaming_is_refused():
    with pytest.raises(ValueError, match="streaming"):
        chat_request("hello", stream=True)


def test_answer_without_usage_is_charged_its_worst_case(llm_client, fake_server):
    answer = fake_server.answer
    fake_server.answer = lambda endpoint, body: {k: v for k, v in answer(endpoint, body).items() if k != "usage"}
    run = create_run(name="no usage", budget_usd=1)
    result = llm_client.complete("hi", max_tokens=10, run=run)
    assert result.ok and result.prompt_tokens is None
    # Worst case: UTF-8 bytes of every text in the messages + chat framing, and all 10 output tokens.
    prompt_bound = len("user") + len("hi") + 4 + 3
    assert result.cost_usd == expected_cost(prompt_bound, 10)
    run.refresh_from_db()
    assert run.spent_usd == result.cost_usd


def test_duplicates_tick_progress_once_per_request(llm_client, fake_server):
    ticks = []
    results = llm_client.run_batch([chat_request("same")] * 3, progress=ticks.append)
    assert len(ticks) == 3 and len(fake_server.completion_requests) == 1
    assert results[1].call_id == results[0].call_id is not None


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_stops_sending_and_keeps_what_finished(make_client, fake_server):
    """Ctrl-C comes while 4 requests are in flight and 8 were answered: the 8 answers are stored,
    nothing more is sent, and a re-run sends only the 92 others."""
    held = HeldAnswers(fake_server, answer_first=8)
    client = make_client(max_concurrency=4)
    requests = [chat_request(f"item {i}") for i in range(100)]
    run = create_run(name="interrupted")
    stuck: list[AssertionError] = []
    # The client takes Ctrl-C only over Python's own handler, which a plain Python process has; a
    # test process may have SIGINT ignored (its parent takes Ctrl-C), so the test sets it (the
    # autouse ``signal_handlers_kept`` puts the process's own back afterwards).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    batch_over = threading.Event()

    def ctrl_c_when_four_wait() -> None:
        try:
            held.wait_until(lambda h: h.waiting >= 4, "4 requests in flight after 8 answers")
            os.kill(os.getpid(), signal.SIGINT)
            if not batch_over.wait(timeout=30):  # a bound on waiting: a failure, never a hang
                stuck.append(AssertionError("Ctrl-C did not stop the batch within 30 s"))
                held.let_all_go()
        except AssertionError as error:
            stuck.append(error)
            held.let_all_go()

    interrupter = threading.Thread(target=ctrl_c_when_four_wait, daemon=True)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.run_batch(requests, run=run)
    finally:
        batch_over.set()
        interrupter.join()
    assert not stuck, stuck[0]
    assert len(fake_server.completion_requests) == 12  # the 8 answered and the 4 cut off
    assert LLMCall.objects.filter(status="ok").count() == 8
    run.refresh_from_db()
    assert run.status == LLMRun.Status.INTERRUPTED
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    # The cut-off requests are answered now: a client still running behind the interrupt would
    # read the answers and send more. A pause, not a time limit: a stopped client never sends.
    held.let_all_go()
    held.wait_until(lambda h: h.answered == 12 and fake_server.in_flight == 0, "the cut-off requests answered")
    time.sleep(0.3)
    assert len(fake_server.completion_requests) == 12, "requests kept going out after Ctrl-C"

    fake_server.reset()
    results = make_client(max_concurrency=32).run_batch(requests, run=run)
    assert all(r.ok for r in results)
    assert len(fake_server.completion_requests) == 92


@pytest.mark.django_db(transaction=True)
def test_arun_from_async_code(llm_client, fake_server):
    async def main():
        try:
            return await llm_client.arun([chat_request("from async"), chat_request("from async")])
        finally:
            # Outside async_to_sync the DB work ran in asgiref's own thread; close its connection.
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    results = asyncio.run(main())
    assert [r.text for r in results] == ["You said: from async"] * 2
    assert len(fake_server.completion_requests) == 1
    assert LLMCall.objects.get().response_text == "You said: from async"


def test_sync_entry_points_refuse_a_running_loop(llm_client):
    async def main():
        llm_client.complete("hello")

    with pytest.raises(RuntimeError, match="event loop"):
        asyncio.run(main())


def test_success_stored_meanwhile_by_another_process_is_kept_once(llm_client, fake_server, monkeypatch):
    first = llm_client.complete("raced")
    # As if another process stored this success after our cache lookup.
    monkeypatch.setattr("llm.client.successful_calls_by_hash", lambda hashes: {})
    run = create_run(name="race")
    results = llm_client.run_batch([chat_request("raced"), chat_request("not raced")], run=run)

    assert all(r.ok for r in results) and not results[0].cached
    assert LLMCall.objects.filter(request_hash=first.request_hash, status="ok").count() == 1
    duplicate = LLMCall.objects.get(request_hash=first.request_hash, status="failed")
    assert "succeeded concurrently" in duplicate.error and duplicate.cost_usd == results[0].cost_usd
    run.refresh_from_db()
    assert run.spent_usd == results[0].cost_usd + results[1].cost_usd == run_cost_from_calls(run)
