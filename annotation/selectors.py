"""Reads of crowd work: what a worker may do, round progress and spend, and judgments for evaluation."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from decimal import Decimal

import pandas as pd
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import Assignment, CollectionRound, Worker, WorkItem
from .task_types import task_types_yielding

BATTLE_COLUMNS = [
    "round_id", "item_id", "assignment_id", "instance_id", "category", "model_a", "model_b",
    "winner", "worker_id", "left", "is_gold", "submitted_at", "duration_seconds",
]
RANKING_COLUMNS = [
    "item_id", "annotator_id", "review_id", "rank", "prompt_rank", "language", "category",
    "round_id", "work_item_id", "assignment_id",
]


def _judgments(*, task_type: str, round: CollectionRound | None, project=None):
    """Assignments that count as data: submitted, not rejected, confirmed by the provider."""
    assignments = Assignment.objects.counted().filter(round__task_type=task_type)
    if round is not None:
        assignments = assignments.filter(round=round)
    if project is not None:
        assignments = assignments.filter(round__project=project)
    return assignments.order_by("submitted_at", "id")


def _rows(*, kind: str, round: CollectionRound | None, project=None) -> list[dict]:
    """The rows every task type that yields ``kind`` contributes, type by type in submission order."""
    rows = []
    for handler in task_types_yielding(kind):
        for assignment in handler.judgment_queryset(_judgments(task_type=handler.key, round=round, project=project)):
            rows.extend(handler.judgment_rows(assignment))
    return rows


def pairwise_battles(round: CollectionRound | None = None, *, project=None) -> pd.DataFrame:
    """One row per human pairwise judgment, in submission order (online Elo uses this order).

    ``winner`` is "model_a" or "model_b" (forced choice: humans never tie); ``category`` is the
    instance's instruction family; ``left`` says which side was shown on the left.
    """
    return pd.DataFrame(_rows(kind="battles", round=round, project=project), columns=BATTLE_COLUMNS)


def ranking_judgments(round: CollectionRound | None = None, *, project=None) -> pd.DataFrame:
    """Long format: one row per (review set, annotator, review) with rank 1 = best.

    ``item_id`` is the review set (the IRR item), so items ranked in several rounds pool together.
    ``project`` keeps the judgments of that project's rounds only (both filters may be given).
    """
    return pd.DataFrame(_rows(kind="rankings", round=round, project=project), columns=RANKING_COLUMNS)


def worker_progress(*, round: CollectionRound, worker: Worker) -> dict:
    """"n of m done" for a worker: m is what the round can still give them plus what they did."""
    # Both counts in one statement: this runs on every "next task".
    counts = CollectionRound.objects.filter(pk=round.pk).values(
        done=_count_subquery(Assignment.objects.submitted().filter(round=round, worker=worker), group_by="round"),
        item_count=_count_subquery(WorkItem.objects.filter(round=round), group_by="round"),
    ).get()
    done, items = counts["done"], counts["item_count"]
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    total = min(items, limit) if limit is not None else items
    return {"done": done, "total": total}


def _count_subquery(queryset, *, group_by: str):
    counted = queryset.order_by().values(group_by).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


@dataclass
class WorkOffer:
    """One round on a worker's work list: what it pays and how long a task takes."""

    round: CollectionRound
    done: int
    total: int
    tasks_left: int
    expected_seconds: float
    # "median" (of the submitted task times), "estimate" (the researcher's) or "time_limit".
    expected_seconds_source: str
    hourly_rate: Decimal | None

    @property
    def expected_minutes(self) -> float:
        return round(self.expected_seconds / 60, 1)


def work_list_for_worker(*, worker: Worker) -> list[WorkOffer]:
    """The open rounds the worker can still do, newest first: qualified (provider, language, approved
    tasks; not blocked), with a task left for them (an open one, or an item they have not done with a
    free slot, within the per-worker limit) and budget for one more task.

    A fixed number of queries, however many rounds are open.
    """
    from .services import CrowdWorkError, check_worker_may_work

    if worker.is_blocked:
        return []
    now = timezone.now()
    # Assignments past their time limit are expired on the next request: they hold no slot here either.
    holding = Assignment.objects.holding_a_slot().exclude(status=Assignment.Status.ASSIGNED, expires_at__lte=now)
    worker_items = Assignment.objects.filter(worker=worker).values("item")
    free_items = (
        WorkItem.objects.filter(round=OuterRef("pk"), completed_at__isnull=True)
        .exclude(pk__in=worker_items)
        .annotate(taken=_count_subquery(holding.filter(item=OuterRef("pk")), group_by="item"))
        .filter(taken__lt=OuterRef("workers_per_item"))
    )
    rounds = list(
        CollectionRound.objects.filter(status=CollectionRound.Status.OPEN)
        .annotate(
            item_count=_count_subquery(WorkItem.objects.filter(round=OuterRef("pk")), group_by="round"),
            free_items=_count_subquery(free_items, group_by="round"),
            committed=_count_subquery(holding.filter(round=OuterRef("pk")), group_by="round"),
            worker_holding=_count_subquery(holding.filter(round=OuterRef("pk"), worker=worker), group_by="round"),
            worker_done=_count_subquery(
                Assignment.objects.submitted().filter(round=OuterRef("pk"), worker=worker), group_by="round"),
            has_open=Exists(Assignment.objects.filter(
                round=OuterRef("pk"), worker=worker, status=Assignment.Status.ASSIGNED, expires_at__gt=now)),
        )
        .order_by("-opened_at", "-id")
    )
    approved = Assignment.objects.filter(worker=worker, review_status=Assignment.ReviewStatus.APPROVED).count()
    durations: dict[int, list[float]] = {}
    for round_id, seconds in (
        Assignment.objects.counted().filter(round__in=[r.pk for r in rounds], duration_seconds__isnull=False)
        .values_list("round_id", "duration_seconds")
    ):
        durations.setdefault(round_id, []).append(seconds)
    offers = []
    for round in rounds:
        try:
            check_worker_may_work(round=round, worker=worker, approved_tasks=approved)
        except CrowdWorkError:
            continue
        rules = round.qualification_rules or {}
        left = round.free_items
        if "max_tasks_per_worker" in rules:
            left = min(left, max(rules["max_tasks_per_worker"] - round.worker_holding, 0))
        if round.budget_cap is not None:
            affordable = (
                int((round.budget_cap - round.committed * round.reward_per_task) // round.reward_per_task)
                if round.reward_per_task > 0 else left
            )
            left = min(left, max(affordable, 0))
        if round.has_open:
            left += 1
        if left <= 0:
            continue
        offers.append(_offer(round=round, durations=durations.get(round.pk, []), tasks_left=left))
    return offers


def _offer(*, round: CollectionRound, durations: list[float], tasks_left: int) -> WorkOffer:
    if durations:
        seconds, source = float(statistics.median(durations)), "median"
    elif round.estimated_seconds_per_task:
        seconds, source = float(round.estimated_seconds_per_task), "estimate"
    else:
        seconds, source = float(round.time_limit_seconds), "time_limit"
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    total = min(round.item_count, limit) if limit is not None else round.item_count
    rate = (round.reward_per_task * Decimal(3600) / Decimal(str(seconds))).quantize(Decimal("0.01")) if seconds else None
    return WorkOffer(round=round, done=round.worker_done, total=total, tasks_left=tasks_left,
                     expected_seconds=seconds, expected_seconds_source=source, hourly_rate=rate)


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
