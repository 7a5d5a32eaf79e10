"""Reads over the benchmark data."""
from __future__ import annotations

from django.db.models import Count, Q

from .models import Verification

YIELD_SPLITS = {
    "single_image": Q(candidate__instance__family__is_multi_image=False),
    "multi_image": Q(candidate__instance__family__is_multi_image=True),
    "all": Q(),
}


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def yield_report(*, source: str | None = None, project=None) -> dict:
    """Pipeline yield per split (paper Table 2): of the verified reference candidates, the share
    kept (correct), discarded for a caption problem and discarded for a response problem.

    Counts final verdicts (imported aggregates and aggregated crowd verifications), one per
    candidate. A verdict with no outcome counts as a candidate in none of the three shares.
    ``source`` keeps only instances of one origin (e.g. "imported", or "crowd" for data
    collected on the platform). ``project`` keeps only that project's instances.
    """
    splits = {}
    for name, condition in YIELD_SPLITS.items():
        verdicts = Verification.objects.filter(condition, is_aggregate=True)
        if source is not None:
            verdicts = verdicts.filter(candidate__instance__source=source)
        if project is not None:
            verdicts = verdicts.filter(candidate__instance__family__project=project)
        counts = verdicts.aggregate(
            candidates=Count("id"),
            # A correct answer that the majority flagged harmful is discarded, so it is not kept.
            correct=Count("id", filter=Q(outcome=Verification.Outcome.CORRECT, harmful=False)),
            caption=Count("id", filter=Q(outcome=Verification.Outcome.CAPTION_PROBLEM)),
            response=Count("id", filter=Q(outcome=Verification.Outcome.RESPONSE_PROBLEM)),
            harmful=Count("id", filter=Q(harmful=True)),
        )
        total = counts["candidates"]
        splits[name] = {
            "candidates": total,
            "kept_pct": _percent(counts["correct"], total),
            "caption_problem_pct": _percent(counts["caption"], total),
            "response_problem_pct": _percent(counts["response"], total),
            "harmful_pct": _percent(counts["harmful"], total),
        }
    return {"splits": splits}
