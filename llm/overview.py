"""What the LLM settings make available, as a researcher sees it: the models, where each comes from,
their prices; and a one-request test of a model. Never the key: only whether it is set."""
from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit

from . import embedded
from .client import complete
from .selectors import measured_speed
from .config import LLMConfig, LLMNotConfigured, configured_models, embedded_enabled, missing_server_help

TEST_PROMPT = "Reply with one short sentence saying that you are ready."
TEST_MAX_TOKENS = 24
TEST_PURPOSE = "model_test"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    source: str  # "embedded", or the setting that names the model: LLM_MODEL / LLM_PRICES
    server: str  # where requests go, without credentials
    input_per_million: Decimal | None
    output_per_million: Decimal | None
    default: bool = False
    note: str = ""
    speed: dict | None = None  # llm.selectors.measured_speed: how fast it answered lately, here


@dataclass(frozen=True)
class Overview:
    models: list[ModelInfo]
    server_source: str  # "embedded", "LLM_BASE_URL", "LLM_API_KEY" or "" (none)
    server: str
    key_set: bool
    problem: str = ""  # why no model is available, naming the settings to set
    embedded_enabled: bool = True
    embedded_loaded: bool = False


def _server_label(config: LLMConfig) -> str:
    if config.embedded:
        return "embedded (in this process, on the CPU)"
    if not config.base_url:
        return "api.openai.com" if config.api_key else ""
    parts = urlsplit(config.base_url)
    # Scheme, host and path only: user names, passwords and query strings stay out of pages.
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def overview() -> Overview:
    try:
        config = LLMConfig.from_settings()
    except LLMNotConfigured as error:
        return Overview(models=[], server_source="", server="", key_set=False, problem=str(error))
    server = _server_label(config)
    models = []
    for name in configured_models() if config.has_server else []:
        price = config.prices.get(name)
        if config.embedded:
            source = "embedded"
            note = (f"{embedded.EMBEDDED_DESCRIPTION}. SmolLM2 with 135M parameters, text only (images in a "
                    f"request are left out), answers of at most {config.embedded_max_tokens} tokens, one "
                    "request at a time; loaded on first use (about 20 s).")
        else:
            source = "LLM_MODEL" if name == config.model else "LLM_PRICES"
            note = "" if price is not None else "no price in LLM_PRICES: a run with a budget cannot use it"
        models.append(ModelInfo(
            name=name, source=source, server=server, default=name == config.model,
            input_per_million=price.input_per_million if price else None,
            output_per_million=price.output_per_million if price else None, note=note,
            speed=measured_speed(name),
        ))
    problem = ""
    if not config.has_server:
        problem = missing_server_help()
    elif not models:
        problem = "A server is configured but no model: set LLM_MODEL (and its price in LLM_PRICES)."
    return Overview(models=models, server_source=config.source, server=server, key_set=bool(config.api_key),
                    problem=problem, embedded_enabled=embedded_enabled(), embedded_loaded=embedded.loaded())


@dataclass(frozen=True)
class ModelTrial:
    model: str
    ok: bool
    reply: str
    latency_seconds: float | None
    error: str = ""
    cost_usd: Decimal | None = None
    loading_seconds: float | None = None  # the embedded model loaded first, not counted in the latency


def load_embedded_model() -> float | None:
    """Loads the embedded model in this process when it is the configured one and not loaded yet,
    and returns the seconds that took (None when there was nothing to load): the call that follows
    then times the answer only. A model that cannot load is left to the request that follows, which
    reports why as any failed request does."""
    try:
        config = LLMConfig.from_settings()
    except LLMNotConfigured:
        return None
    if not config.embedded or embedded.loaded():
        return None
    started = time.perf_counter()
    try:
        embedded.load()
    except Exception:  # noqa: BLE001 - the request that follows fails the same way and says so
        return None
    return time.perf_counter() - started


def try_model(model: str) -> ModelTrial:
    """One short request to ``model`` (one of the configured ones; else ``LLMNotConfigured``), sent
    even if an identical one was answered before: the point is to see the server answer now. The
    embedded model is loaded before the request, its loading timed apart from the answer."""
    if model not in configured_models():
        raise LLMNotConfigured(f"{model!r} is not one of the configured models")
    loading = load_embedded_model() if model == embedded.EMBEDDED_MODEL else None
    nonce = time.time_ns()  # a new request body each time: never answered from the cache
    result = complete(TEST_PROMPT, model=model, purpose=TEST_PURPOSE, max_tokens=TEST_MAX_TOKENS,
                      temperature=0, user=f"model-test-{nonce}")
    return ModelTrial(model=model, ok=result.ok, reply=(result.text or "").strip(),
                      latency_seconds=result.latency_seconds, error=result.error, cost_usd=result.cost_usd,
                      loading_seconds=loading)
