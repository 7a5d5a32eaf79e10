"""The LLM models page's reads: a model's measured speed is the median of its recent calls, and a
test of the embedded model loads it before the timed request, so neither counts the loading."""
from __future__ import annotations

import pytest

from llm import embedded, overview
from llm.models import LLMCall
from llm.selectors import measured_speed

from .fake_embedded import fake_embedded_model  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def answered(model: str, latency: float, tokens: int, number: int) -> LLMCall:
    return LLMCall.objects.create(request_hash=f"{number:064x}", endpoint=LLMCall.Endpoint.CHAT, model=model,
                                  request={}, status=LLMCall.Status.OK, latency_seconds=latency,
                                  completion_tokens=tokens)


def test_a_call_that_loaded_the_model_does_not_make_the_speed():
    # The first call also loaded the model (43 s); the warm ones took 3.6 to 3.8 s.
    for number, (latency, tokens) in enumerate([(43.0, 60), (3.7, 24), (3.6, 24), (3.8, 24)]):
        answered(embedded.EMBEDDED_MODEL, latency, tokens, number)
    LLMCall.objects.create(request_hash="f" * 64, endpoint=LLMCall.Endpoint.CHAT, model=embedded.EMBEDDED_MODEL,
                           request={}, status=LLMCall.Status.FAILED, latency_seconds=120.0)  # not answered
    speed = measured_speed(embedded.EMBEDDED_MODEL)
    assert speed["calls"] == 4
    assert speed["median_seconds"] == pytest.approx(3.75)
    assert speed["tokens_per_second"] == pytest.approx((24 / 3.8 + 24 / 3.7) / 2)
    assert measured_speed("never-called") is None


def test_testing_the_embedded_model_loads_it_before_the_timed_request(fake_embedded_model, monkeypatch):
    loaded_when_sent = []
    send = overview.complete

    def complete(*args, **kwargs):
        loaded_when_sent.append(embedded.loaded())
        return send(*args, **kwargs)

    monkeypatch.setattr(overview, "complete", complete)
    first = overview.try_model(embedded.EMBEDDED_MODEL)
    assert first.ok and first.reply == "A red square on a white background."
    assert first.loading_seconds is not None and first.latency_seconds is not None
    assert loaded_when_sent == [True] and fake_embedded_model.events == ["load", "generate"]
    again = overview.try_model(embedded.EMBEDDED_MODEL)  # loaded already: nothing to time apart
    assert again.ok and again.loading_seconds is None
    assert fake_embedded_model.events == ["load", "generate", "generate"]
