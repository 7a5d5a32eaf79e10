"""A fake OpenAI-compatible server on a free port, and clients pointed at it."""
from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest

from fakes.openai_server import FakeOpenAIServer
from llm.client import LLMClient

MODEL = "fake-model"
# Round prices make expected costs easy to check by hand.
PRICES = {MODEL: {"input": 2, "output": 10}, "cheap-model": {"input": "0.15", "output": "0.6"}}


# How long a held request or a waiting test may wait before it counts as stuck. Only a broken
# client or server ever reaches it; how fast things are is measured in bench/, never here.
STUCK_SECONDS = 60


class HeldAnswers:
    """Holds the fake server's completion answers until the test lets them go: requests arrive and
    count as in flight (``server.peak_in_flight``), but none is answered before its turn. Tests see
    what a client keeps in flight and sends next without timing anything.

    ``answer_first`` requests are answered as they arrive; later ones wait for ``let_one_go`` or
    ``let_all_go``."""

    def __init__(self, server, *, answer_first: int = 0):
        self._answer = server.answer
        self._changed = threading.Condition()
        self.arrived = 0  # completion requests that reached the answer
        self.allowed = answer_first  # how many of them may be answered
        self.answered = 0
        server.answer = self._held_answer

    def _held_answer(self, endpoint: str, body: dict) -> dict:
        with self._changed:
            self.arrived += 1
            self._changed.notify_all()
            if not self._changed.wait_for(lambda: self.answered < self.allowed, timeout=STUCK_SECONDS):
                raise RuntimeError("held request never let go")
            self.answered += 1
            self._changed.notify_all()
        return self._answer(endpoint, body)

    @property
    def waiting(self) -> int:
        """Requests that arrived and may not be answered yet."""
        with self._changed:
            return max(0, self.arrived - self.allowed)

    def wait_until(self, condition, what: str) -> None:
        # Checked again every 50 ms, not only when an answer is let go: a condition may read state
        # that changes without a notification (the server's in-flight count drops after the answer).
        deadline = time.monotonic() + STUCK_SECONDS
        with self._changed:
            while not condition(self) and time.monotonic() < deadline:
                self._changed.wait(timeout=0.05)
            if not condition(self):
                raise AssertionError(f"stuck waiting for {what} (arrived {self.arrived}, "
                                     f"allowed {self.allowed}, answered {self.answered})")

    def let_one_go(self) -> None:
        with self._changed:
            self.allowed += 1
            self._changed.notify_all()

    def let_all_go(self) -> None:
        with self._changed:
            self.allowed = 1 << 30
            self._changed.notify_all()


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
