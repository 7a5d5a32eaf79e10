"""Reads: stored successful responses (the cache) and spending."""
from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from statistics import median

from djangokit.money import MoneySum

from .models import LLMCall, LLMRun

# Stays far below every database's limit on query parameters.
_HASHES_PER_QUERY = 500


def successful_calls_by_hash(hashes: Iterable[str]) -> dict[str, LLMCall]:
    wanted = list(dict.fromkeys(hashes))
    found: dict[str, LLMCall] = {}
    for start in range(0, len(wanted), _HASHES_PER_QUERY):
        chunk = wanted[start : start + _HASHES_PER_QUERY]
        for call in LLMCall.objects.filter(status=LLMCall.Status.OK, request_hash__in=chunk).only(
            "id", "request_hash", "model", "response", "response_text", "prompt_tokens", "completion_tokens"
        ):
            found[call.request_hash] = call
    return found


def run_cost_from_calls(run: LLMRun) -> Decimal:
    """The run's spending recomputed from its calls (a check on ``LLMRun.spent_usd``)."""
    return run.calls.aggregate(total=MoneySum("cost_usd"))["total"]


def measured_speed(model: str, *, last: int = 50) -> dict | None:
    """How fast ``model`` answered lately, from its last ``last`` answered calls (cache hits are not
    calls): the median seconds of a call and the median completion tokens per second of a call. The
    median, not the mean: a call that also loaded the embedded model (once per process, tens of
    seconds) is one slow call among the others instead of weighing on the figure as many calls
    would. None without such calls."""
    rows = list(
        LLMCall.objects.filter(model=model, status=LLMCall.Status.OK, latency_seconds__gt=0)
        .order_by("-pk").values_list("latency_seconds", "completion_tokens")[:last]
    )
    if not rows:
        return None
    return {"calls": len(rows), "median_seconds": median(latency for latency, _ in rows),
            "tokens_per_second": median((count or 0) / latency for latency, count in rows)}
