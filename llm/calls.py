"""What a caller asks for (``LLMRequest``) and what it gets back (``LLMResult``)."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from .images import ImageSource, vision_message

Endpoint = Literal["chat", "completions"]
ResultStatus = Literal["ok", "failed", "budget_exceeded"]

# Bump when the hashed form changes, so old cache rows stop matching instead of matching wrongly.
CACHE_KEY_VERSION = 1
COMPLETION_LIMIT_PARAMS = ("max_tokens", "max_completion_tokens")
_DATA_URL = re.compile(r"^data:([^;,]+)?(;base64)?,(.*)$", re.DOTALL)


class BudgetExceeded(Exception):
    """A request was not sent because its run's budget could not cover it."""


class LLMCallFailed(Exception):
    """A request was sent and did not produce a usable response."""


@dataclass(frozen=True)
class RenderedPrompt:
    """Text made from a prompt template, remembering which version made it."""

    text: str
    template_name: str
    template_version: int

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class LLMRequest:
    """One request. ``model=None`` means settings.LLM_MODEL. Only the body is hashed for the cache;
    purpose and template are bookkeeping."""

    endpoint: Endpoint
    messages: tuple[dict, ...] | None = None
    prompt: str | None = None
    model: str | None = None
    params: dict = field(default_factory=dict)
    purpose: str = ""
    template_name: str = ""
    template_version: int | None = None

    def body(self, model: str) -> dict:
        if self.endpoint == "chat":
            return {"model": model, "messages": list(self.messages or ()), **self.params}
        return {"model": model, "prompt": self.prompt, **self.params}


def _template_of(*texts: str | RenderedPrompt | None) -> tuple[str, int | None]:
    for text in texts:
        if isinstance(text, RenderedPrompt):
            return text.template_name, text.template_version
    return "", None


def _check_params(params: dict) -> None:
    if params.get("stream"):
        raise ValueError("streaming is not supported: responses are cached and accounted whole")


def chat_request(
    prompt: str | RenderedPrompt | None = None,
    *,
    images: Sequence[ImageSource] = (),
    system: str | RenderedPrompt | None = None,
    messages: Sequence[dict] | None = None,
    model: str | None = None,
    purpose: str = "",
    detail: str | None = None,
    **params,
) -> LLMRequest:
    """A chat request from a prompt (+ images, + system prompt), or from ready-made ``messages``.

    The template recorded is the prompt's if it was rendered from one, else the system prompt's.
    """
    _check_params(params)
    if (prompt is None) == (messages is None):
        raise ValueError("give either prompt (with optional images/system) or messages, not both")
    if messages is not None:
        built = list(messages)
        if images or system is not None:
            raise ValueError("images and system go inside messages when messages are given")
    else:
        built = []
        if system is not None:
            built.append({"role": "system", "content": str(system)})
        if images:
            built.append(vision_message(str(prompt), images, detail=detail))
        else:
            built.append({"role": "user", "content": str(prompt)})
    name, version = _template_of(prompt, system)
    return LLMRequest(
        endpoint="chat",
        messages=tuple(built),
        model=model,
        params=params,
        purpose=purpose,
        template_name=name,
        template_version=version,
    )


def completion_request(
    prompt: str | RenderedPrompt,
    *,
    model: str | None = None,
    purpose: str = "",
    echo: bool = False,
    logprobs: int | None = None,
    **params,
) -> LLMRequest:
    """A legacy ``/v1/completions`` request. ``echo=True, logprobs=k, max_tokens=0`` returns the
    log-probability of every prompt token (what a perplexity ranking needs)."""
    _check_params(params)
    if echo:
        params["echo"] = True
    if logprobs is not None:
        params["logprobs"] = logprobs
    name, version = _template_of(prompt)
    return LLMRequest(
        endpoint="completions",
        prompt=str(prompt),
        model=model,
        params=params,
        purpose=purpose,
        template_name=name,
        template_version=version,
    )


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(endpoint: str, body: dict) -> str:
    key = canonical_json({"v": CACHE_KEY_VERSION, "endpoint": endpoint, "body": body})
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _shrink_data_urls(value: object) -> object:
    if isinstance(value, str):
        match = _DATA_URL.match(value) if value.startswith("data:") else None
        if match:
            digest = hashlib.sha256(value.encode("ascii", "replace")).hexdigest()
            return f"data:{match.group(1) or ''};sha256={digest};chars={len(value)}"
        return value
    if isinstance(value, dict):
        return {key: _shrink_data_urls(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shrink_data_urls(item) for item in value]
    return value


def storable_body(body: dict) -> dict:
    """The body for the database: inline images become a digest (the hash still covers them)."""
    return _shrink_data_urls(body)


def _texts_and_images(value: object) -> tuple[list[str], int]:
    if isinstance(value, str):
        return [value], 0
    if isinstance(value, dict):
        if value.get("type") == "image_url" or "image_url" in value:
            return [], 1
        texts, images = [], 0
        for item in value.values():
            more_texts, more_images = _texts_and_images(item)
            texts += more_texts
            images += more_images
        return texts, images
    if isinstance(value, list | tuple):
        texts, images = [], 0
        for item in value:
            more_texts, more_images = _texts_and_images(item)
            texts += more_texts
            images += more_images
        return texts, images
    return [], 0


def max_prompt_tokens(body: dict, image_tokens: int) -> int:
    """An upper bound on prompt tokens without a tokenizer: byte-level BPE never produces more
    tokens than UTF-8 bytes. Images count ``image_tokens`` each; chat messages add framing."""
    if "messages" in body:
        texts, images = _texts_and_images(body["messages"])
        framing = 4 * len(body["messages"]) + 3
    else:
        texts, images = _texts_and_images(body.get("prompt", ""))
        framing = 0
    return sum(len(text.encode("utf-8")) for text in texts) + images * image_tokens + framing


def max_completion_tokens(body: dict) -> int:
    limit = next((body[name] for name in COMPLETION_LIMIT_PARAMS if body.get(name) is not None), 0)
    choices = max(int(body.get("n") or 1), int(body.get("best_of") or 1))
    return int(limit) * choices


@dataclass
class LLMResult:
    """The outcome of one request. ``cached=True`` means nothing was sent or charged for it;
    ``call_id`` then points at the stored call that produced the response."""

    request: LLMRequest
    status: ResultStatus
    request_hash: str = ""
    model: str = ""
    text: str | None = None
    response: dict | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: Decimal | None = None
    cached: bool = False
    call_id: int | None = None
    attempts: int = 0
    latency_seconds: float | None = None
    http_status: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def texts(self) -> list[str]:
        """Every choice's text (several when the request set ``n``)."""
        choices = (self.response or {}).get("choices") or []
        if self.request.endpoint == "chat":
            return [message_text((choice.get("message") or {}).get("content")) for choice in choices]
        return [choice.get("text") or "" for choice in choices]

    @property
    def logprobs(self) -> dict | None:
        """The first choice's ``logprobs`` object (completions: tokens, token_logprobs,
        top_logprobs, text_offset)."""
        choices = (self.response or {}).get("choices") or []
        return choices[0].get("logprobs") if choices else None

    def raise_for_error(self) -> LLMResult:
        if self.status == "budget_exceeded":
            raise BudgetExceeded(self.error)
        if self.status == "failed":
            raise LLMCallFailed(self.error)
        return self


def message_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise ValueError(f"message content is neither text nor parts: {type(content).__name__}")
