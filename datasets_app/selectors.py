"""Reads over the benchmark data, and its rows that a user may see (the projects they belong to)."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from projects.selectors import projects_for_user

from .models import Image, Instance, InstructionFamily, ModelOutput, ReviewSet, Verification

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


def families_for_user(user):
    return InstructionFamily.objects.filter(project__in=projects_for_user(user))


def instances_for_user(user):
    return Instance.objects.filter(family__project__in=projects_for_user(user))


def model_outputs_for_user(user):
    return ModelOutput.objects.filter(instance__family__project__in=projects_for_user(user))


def review_sets_for_user(user):
    return ReviewSet.objects.filter(project__in=projects_for_user(user))


def images_of_projects(projects) -> QuerySet[Image]:
    """Images of ``projects`` (each image belongs to one project, like the instances, seed examples
    and review sets that show it)."""
    return Image.objects.filter(project__in=projects)


def images_for_user(user) -> QuerySet[Image]:
    return images_of_projects(projects_for_user(user))
