"""The fake OpenAI-compatible server with the LLM settings pointed at it, and IRR data builders."""
from __future__ import annotations

import io

import pytest
from PIL import Image as PILImage

from fakes.openai_server import FakeOpenAIServer

MODEL = "fake-vision"


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    """Stored images go to a throw-away folder, never the project's media."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(api_key="irr-key", models=(MODEL,)) as server:
        yield server


@pytest.fixture
def llm_settings(settings, fake_server):
    """Every LLM call made through settings (commands, services) goes to the fake server."""
    settings.LLM_BASE_URL = fake_server.base_url
    settings.LLM_API_KEY = "irr-key"
    settings.LLM_MODEL = MODEL
    settings.LLM_PRICES = {MODEL: {"input": 1, "output": 2}}
    settings.LLM_MAX_RETRIES = 0
    return settings


def png_bytes(color: str, size=(48, 32)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def user_text(body: dict, index: int = 0) -> str:
    """The text of the index-th user message of a chat request (0 = the first)."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[index]["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if part["type"] == "text")


def image_parts(body: dict) -> list[str]:
    return [part["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
            for part in m["content"] if part["type"] == "image_url"]
