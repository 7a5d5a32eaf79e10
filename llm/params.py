"""The parameters of one LLM run, as every LLM step takes them: built once by the caller (a
command, a background step run, a test) and passed through unchanged."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .calls import LLMResult
    from .client import LLMClient
    from .models import LLMRun


@dataclass(frozen=True)
class LLMRunParams:
    """``model``: the model to ask (None: the configured ``LLM_MODEL``); ``client``: the server to
    ask (None: the configured one); ``run``: the ``LLMRun`` to charge, whose cap applies, or else
    ``budget_usd``: the cap of the run the step opens (None: no cap); ``on_requests(n)`` is told how
    many requests a batch is about to send and ``progress(result)`` is called per finished request,
    for a progress bar or a step run's counters."""

    model: str | None = None
    budget_usd: Decimal | float | str | None = None
    run: LLMRun | None = None
    progress: Callable[[LLMResult], object] | None = None
    on_requests: Callable[[int], object] | None = None
    client: LLMClient | None = None
