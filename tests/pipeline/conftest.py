"""The pipeline tests talk to a fake OpenAI-compatible server through the real SDK."""
from __future__ import annotations

import pytest

from fakes.openai_server import FakeOpenAIServer
from llm.client import LLMClient

MODEL = "fake-model"
# Round prices make budgets easy to reason about: 2 USD / 1M input tokens, 10 USD / 1M output tokens.
PRICES = {MODEL: {"input": 2, "output": 10}, "candidate-vlm": {"input": 1, "output": 1}}


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fake_server():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def llm_settings(settings, fake_server):
    """Django settings pointing at the fake server, as a researcher's environment would."""
    settings.LLM_BASE_URL = fake_server.base_url
    settings.LLM_API_KEY = ""
    settings.LLM_MODEL = MODEL
    settings.LLM_PRICES = PRICES
    settings.LLM_MAX_RETRIES = 3
    return settings


@pytest.fixture
def no_llm_settings(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_API_KEY = ""
    settings.LLM_MODEL = ""
    return settings


@pytest.fixture
def llm_client(fake_server) -> LLMClient:
    return LLMClient(base_url=fake_server.base_url, api_key="", model=MODEL, prices=PRICES,
                     backoff_base=0.05, backoff_max=0.2)
