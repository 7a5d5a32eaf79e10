"""A fake OpenAI-compatible server on a free port, and clients pointed at it."""
from __future__ import annotations

from decimal import Decimal

import pytest

from fakes.openai_server import FakeOpenAIServer
from llm.client import LLMClient

MODEL = "fake-model"
# Round prices make expected costs easy to check by hand.
PRICES = {MODEL: {"input": 2, "output": 10}, "cheap-model": {"input": "0.15", "output": "0.6"}}


def expected_cost(prompt_tokens: int, completion_tokens: int, model: str = MODEL) -> Decimal:
    price = PRICES[model]
    return (prompt_tokens * Decimal(str(price["input"])) + completion_tokens * Decimal(str(price["output"]))) / 1_000_000


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(api_key="test-key") as server:
        yield server


@pytest.fixture
def make_client(fake_server):
    def make(**overrides) -> LLMClient:
        options = dict(
            base_url=fake_server.base_url,
            api_key="test-key",
            model=MODEL,
            prices=PRICES,
            max_concurrency=8,
            backoff_base=0.05,
            backoff_max=0.2,
        )
        options.update(overrides)
        return LLMClient(**options)

    return make


@pytest.fixture
def llm_client(make_client) -> LLMClient:
    return make_client()
