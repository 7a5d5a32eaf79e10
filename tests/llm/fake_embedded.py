"""A stand-in for the embedded model's weights: the embedded server, its wire format and the LLM
client run as they do, while loading and generating are instant and recorded. The real model is
tested in test_embedded.py."""
from __future__ import annotations

import pytest

from llm import embedded


class FakeModel:
    """Takes the place of ``llm.embedded._Model``: loaded once, answering one fixed sentence."""

    _instance: FakeModel | None = None
    events: list[str] = []

    def __init__(self) -> None:
        FakeModel.events.append("load")

    @classmethod
    def get(cls) -> FakeModel:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def generate(self, messages, **options) -> embedded.Generation:
        FakeModel.events.append("generate")
        return embedded.Generation(text="A red square on a white background.", prompt_tokens=12,
                                   completion_tokens=8, finish_reason="stop")


@pytest.fixture
def fake_embedded_model(monkeypatch, settings):
    """No server configured and the embedded model on, answered by ``FakeModel`` (not loaded yet)."""
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, True
    monkeypatch.setattr(embedded, "available", lambda: True)
    monkeypatch.setattr(FakeModel, "_instance", None)
    monkeypatch.setattr(FakeModel, "events", [])
    monkeypatch.setattr(embedded, "_Model", FakeModel)
    return FakeModel
