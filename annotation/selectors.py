"""Reads of crowd work: what a worker may do, round progress and spend, and judgments for evaluation."""
from __future__ import annotations

import statistics
from decimal import Decimal

import pandas as pd
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from .models import Assignment, CollectionRound, Worker
from .task_types import task_types_yielding

BATTLE_COLUMNS = [
    "round_id", "item_id", "assignment_id", "instance_id", "category", "model_a", "model_b",
    "winner", "worker_id", "left", "is_gold", "submitted_at", "duration_seconds",
]
RANKING_COLUMNS = [
    "item_id", "annotator_id", "review_id", "rank", "prompt_rank", "language", "category",
    "round_id", "work_item_id", "assignment_id",
]


def _judgments(*, task_type: str, round: CollectionRound | None, include_gold: bool = False):
    """Assignments that count as data: submitted, not rejected, confirmed by the provider, and (unless
    ``include_gold``, for scoring workers) not on a gold / attention item: gold never enters
    evaluation data."""
    assignments = Assignment.objects.counted().filter(round__task_type=task_type)
    if not include_gold:
        assignments = assignments.filter(item__is_gold=False)
    if round is not None:
        assignments = assignments.filter(round=round)
    return assignments.order_by("submitted_at", "id")


def _rows(*, kind: str, round: CollectionRound | None, include_gold: bool = False) -> list[dict]:
    """The rows every task type that yields ``kind`` contributes, type by type in submission order."""
    rows = []
    for handler in task_types_yielding(kind):
        judgments = _judgments(task_type=handler.key, round=round, include_gold=include_gold)
        for assignment in handler.judgment_queryset(judgments):
            rows.extend(handler.judgment_rows(assignment))
    return rows


def pairwise_battles(round: CollectionRound | None = None, *, include_gold: bool = False) -> pd.DataFrame:
    """One row per human pairwise judgment, in submission order (online Elo uses this order).

    Judgments on gold items are left out unless ``include_gold`` (worker quality scores them).

    ``winner`` is "model_a" or "model_b" (forced choice: humans never tie); ``category`` is the
    instance's instruction family; ``left`` says which side was shown on the left.
    """
    return pd.DataFrame(_rows(kind="battles", round=round, include_gold=include_gold), columns=BATTLE_COLUMNS)


def ranking_judgments(round: CollectionRound | None = None, *, include_gold: bool = False) -> pd.DataFrame:
    """Long format: one row per (review set, annotator, review) with rank 1 = best; gold items are
    left out unless ``include_gold``.

    ``item_id`` is the review set (the IRR item), so items ranked in several rounds pool together.
    """
    return pd.DataFrame(_rows(kind="rankings", round=round, include_gold=include_gold), columns=RANKING_COLUMNS)


def worker_progress(*, round: CollectionRound, worker: Worker) -> dict:
    """"n of m done" for a worker: m is what the round can still give them plus what they did."""
    done = Assignment.objects.submitted().filter(round=round, worker=worker).count()
    items = round.items.count()
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    total = min(items, limit) if limit is not None else items
    return {"done": done, "total": total}


def quality_warning(*, round: CollectionRound, worker: Worker) -> str:
    """The round's warning to a worker who failed as many check questions as its policy allows
    before warning (empty otherwise)."""
    from .services import failed_checks

    policy = round.quality_policy
    warn_after, stop_after = policy["warn_after_failed_checks"], policy["stop_after_failed_checks"]
    failed = failed_checks(round=round, worker=worker) if warn_after else 0
    if not warn_after or failed < warn_after:
        return ""
    if stop_after:
        return _("%(failed)d of your answers to check questions were wrong. Please read each task carefully: "
                 "after %(stop)d wrong answers this round gives you no more tasks.") % {
            "failed": failed, "stop": stop_after}
    return _("%(failed)d of your answers to check questions were wrong. Please read each task carefully.") % {
        "failed": failed}


def approval_split(*, round: CollectionRound, assignments):
    """(approvable, held): the round's approval policy applied to submitted assignments. With a minimum
    gold accuracy, only workers whose gold answers in the round reach it are approved automatically;
    the others' work (and that of workers with no gold answer) waits for a researcher's review."""
    minimum = round.quality_policy["min_gold_accuracy_for_approval"]
    if minimum is None:
        return assignments, assignments.none()
    gold = (Assignment.objects.submitted().filter(round=round, gold_passed__isnull=False)
            .exclude(review_status=Assignment.ReviewStatus.REJECTED)
            .values("worker").annotate(answers=Count("pk"), passed=Count("pk", filter=Q(gold_passed=True))))
    good = [row["worker"] for row in gold if row["passed"] >= minimum * row["answers"]]
    return assignments.filter(worker__in=good), assignments.exclude(worker__in=good)


def open_rounds_for_worker(*, worker: Worker) -> list[dict]:
    """Open rounds with the worker's progress, newest first."""
    rounds = CollectionRound.objects.filter(status=CollectionRound.Status.OPEN).order_by("-opened_at", "-id")
    return [{"round": round, **worker_progress(round=round, worker=worker)} for round in rounds]


def seconds_left(assignment: Assignment) -> int:
    return max(int((assignment.expires_at - timezone.now()).total_seconds()), 0)


def open_assignment(*, round: CollectionRound, worker: Worker) -> Assignment | None:
    return Assignment.objects.filter(round=round, worker=worker, status=Assignment.Status.ASSIGNED).first()


def round_progress(*, round: CollectionRound) -> dict:
    """Items done, assignments by status, spend so far and the effective hourly wage."""
    items = round.items.aggregate(total=Count("pk"), completed=Count("pk", filter=Q(completed_at__isnull=False)))
    by_status = dict(
        round.assignments.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    # Only confirmed work is paid or timed: forged or unconfirmed provider work is neither.
    counted = Assignment.objects.counted().filter(round=round)
    paid = counted.count()
    durations = list(counted.filter(duration_seconds__isnull=False).values_list("duration_seconds", flat=True))
    median_seconds = statistics.median(durations) if durations else None
    effective_wage = (
        (round.reward_per_task * Decimal(3600) / Decimal(str(median_seconds))).quantize(Decimal("0.01"))
        if median_seconds
        else None
    )
    return {
        "items": items["total"],
        "items_completed": items["completed"],
        "assignments": by_status,
        "judgments_counted": paid,
        "spent": round.reward_per_task * paid,
        "budget_cap": round.budget_cap,
        "median_seconds": median_seconds,
        "effective_hourly_wage": effective_wage,
        "target_hourly_wage": round.target_hourly_wage,
    }


def qualifying_feedback(*, round: CollectionRound, worker: Worker) -> dict | None:
    """In a qualifying round: what the worker is told about their last answer and, once every item
    is answered, whether they qualified; None in other rounds or before the first answer."""
    from .services import qualifying_result

    result = qualifying_result(round=round, worker=worker)
    if result is None or not result["answers"]:
        return None
    last = (Assignment.objects.submitted().filter(round=round, worker=worker, gold_passed__isnull=False)
            .select_related("item", "round").order_by("-submitted_at", "-pk").first())
    outcome = ""
    if result["finished"]:
        outcome = (_("You passed the qualification (%(passed)d of %(answers)d right): this project's other "
                     "rounds are open to you.") if result["qualified"] else
                   _("You did not pass the qualification (%(passed)d of %(answers)d right).")) % result
    return {"last": round.task_type_handler.gold_feedback(last), "passed": bool(last.gold_passed),
            "outcome": outcome, **result}
