"""Reads for watching crowd work: one round, or the open rounds of a project, as plain data.

The cockpit's watch pages and their JSON show exactly these dicts. Progress, spend and the wage come
from ``round_progress``; what "agreement so far" means is the round's task type's own answer
(``TaskType.agreement_so_far``), and what an item's coverage counts under is its ``coverage_lookup``.
Only counted work (submitted, not rejected, confirmed by the provider) is timed, paid or counted.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from datetime import timezone as dt_timezone
from decimal import Decimal

import pandas as pd
from django.db.models import Count, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from datasets_app.models import Instance, InstructionFamily

from .models import Assignment, CollectionRound
from .selectors import MIN_TIMED_TASKS, round_progress

DEFAULT_COVERAGE_TARGET = 10
# Hourly throughput shows at most this many hours, the most recent ones.
THROUGHPUT_HOURS = 48


def throughput(assignments) -> list[dict]:
    """Counted submissions per hour (UTC, oldest first) from the first to the last, the last
    ``THROUGHPUT_HOURS`` hours at most; hours without a submission count 0."""
    # Counted per hour by the database: one row per hour with submissions, not one per submission.
    counts = (assignments.counted().exclude(submitted_at=None).order_by()
              .annotate(hour=TruncHour("submitted_at", tzinfo=dt_timezone.utc)).values("hour")
              .annotate(n=Count("pk")).values_list("hour", "n"))
    counts = dict(counts)
    if not counts:
        return []
    per_hour = pd.Series(counts, dtype="int64")
    per_hour.index = pd.DatetimeIndex(list(per_hour.index))
    per_hour = per_hour.sort_index().resample("h").sum().tail(THROUGHPUT_HOURS)
    return [{"hour": hour.to_pydatetime(), "submissions": int(count)} for hour, count in per_hour.items()]


def assignments_in_flight(assignments, *, now: datetime | None = None) -> int:
    """Assignments taken by a worker and neither submitted, returned nor expired yet."""
    return assignments.filter(status=Assignment.Status.ASSIGNED, expires_at__gt=now or timezone.now()).count()


def coverage(groups: dict[str, tuple[int, int]], *, target: int) -> list[dict]:
    """Per group (sorted by name): done and total against ``target``; ``groups`` maps name -> (done, total)."""
    return [
        {"name": name, "done": done, "total": total, "target": target, "missing": max(target - done, 0),
         "reached": done >= target}
        for name, (done, total) in sorted(groups.items())
    ]


def round_coverage(*, round: CollectionRound, target: int = DEFAULT_COVERAGE_TARGET) -> list[dict] | None:
    """Completed items per family (or whatever the task type counts its items under) against ``target``;
    None when the round's task type names nothing to count under."""
    lookup = round.task_type_handler.coverage_lookup
    if lookup is None:
        return None
    rows = (
        round.items.values(lookup)
        .annotate(total=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False)))
        .values_list(lookup, "done", "total")
    )
    return coverage({str(name): (done, total) for name, done, total in rows}, target=target)


def round_watch(*, round: CollectionRound, coverage_target: int = DEFAULT_COVERAGE_TARGET,
                with_throughput: bool = True, agreement: Callable[[CollectionRound], dict | None] | None = None) -> dict:
    """Everything the round watch shows: progress and spend (``round_progress``), assignments in
    flight, hourly throughput, the type's agreement so far and the coverage against ``coverage_target``.
    ``agreement`` reads the agreement so far (the cockpit's stored one); by default the type computes it."""
    progress = round_progress(round=round)
    budget_cap = progress["budget_cap"]
    target_wage = progress["target_hourly_wage"]
    wage = progress["effective_hourly_wage"]
    return {
        "round": {"id": round.pk, "name": round.name, "task_type": round.task_type, "status": round.status,
                  "currency": round.currency, "workers_per_item": round.workers_per_item,
                  "reward_per_task": round.reward_per_task},
        "items": progress["items"],
        "items_completed": progress["items_completed"],
        "judgments_counted": progress["judgments_counted"],
        "assignments": progress["assignments"],
        "in_flight": assignments_in_flight(round.assignments.all()),
        "spent": progress["spent"],
        "budget_cap": budget_cap,
        "budget_left": None if budget_cap is None else budget_cap - progress["spent"],
        "median_seconds": progress["median_seconds"],
        "timed_tasks": progress["timed_tasks"],
        "min_timed_tasks": MIN_TIMED_TASKS,
        "effective_hourly_wage": wage,
        "target_hourly_wage": target_wage,
        "wage_meets_target": None if wage is None else wage >= target_wage,
        "throughput": throughput(round.assignments.all()) if with_throughput else None,
        "agreement": (agreement or round.task_type_handler.agreement_so_far)(round),
        "coverage_target": coverage_target,
        "coverage": round_coverage(round=round, target=coverage_target),
        "goal": goal_progress(round=round),
    }


def goal_progress(*, round: CollectionRound) -> dict | None:
    """An adaptive round's goal as its sampler last measured it (``text``: e.g. "7 of 9 adjacent pairs
    separated"), its budget of judgments and why it stopped (None while it runs); None for other rounds."""
    state = round.sampler_state or {}
    if not state.get("sampler"):
        return None
    progress = state.get("progress") or {}
    return {"goal": progress.get("goal"), "text": progress.get("text"), "done": progress.get("done"),
            "total": progress.get("total"), "met": progress.get("met", False), "judgments": state.get("judgments", 0),
            "budget_judgments": state.get("budget_judgments"), "stopped": state.get("stopped")}


def verified_per_family(*, project, target: int = DEFAULT_COVERAGE_TARGET) -> list[dict]:
    """Verified instances per instruction family of the project (every family, none verified
    included) against ``target`` (the paper aims at 10 verified instances per family)."""
    rows = (
        InstructionFamily.objects.filter(project=project)
        .annotate(done=Count("instances", filter=Q(instances__status=Instance.Status.VERIFIED)),
                  total=Count("instances"))
        .values_list("name", "done", "total")
    )
    return coverage({name: (done, total) for name, done, total in rows}, target=target)


def project_watch(*, project, coverage_target: int = DEFAULT_COVERAGE_TARGET,
                  agreement: Callable[[CollectionRound], dict | None] | None = None) -> dict:
    """The project's open rounds, each as in ``round_watch`` (without its own throughput), their
    totals (spend per currency), the hourly throughput of all of them, its complete rounds (listed
    apart, not in progress), and verified instances per family against ``coverage_target``."""
    rounds = list(CollectionRound.objects.filter(project=project, status=CollectionRound.Status.OPEN)
                  .order_by("-opened_at", "-id"))
    watches = [round_watch(round=round, coverage_target=coverage_target, with_throughput=False, agreement=agreement)
               for round in rounds]
    # Spend in capped rounds is compared with their caps alone: the uncapped rounds' spend beside
    # the sum of caps would read as overspending.
    spend: dict[str, dict] = defaultdict(lambda: {"spent": Decimal("0"), "budget_cap": Decimal("0"), "uncapped": 0,
                                                  "capped": 0, "spent_capped": Decimal("0"),
                                                  "spent_uncapped": Decimal("0")})
    for watch in watches:
        entry = spend[watch["round"]["currency"]]
        entry["spent"] += watch["spent"]
        if watch["budget_cap"] is None:
            entry["uncapped"] += 1
            entry["spent_uncapped"] += watch["spent"]
        else:
            entry["capped"] += 1
            entry["budget_cap"] += watch["budget_cap"]
            entry["spent_capped"] += watch["spent"]
    assignments = Assignment.objects.filter(round__in=rounds)
    complete = CollectionRound.objects.filter(project=project, status=CollectionRound.Status.COMPLETE).annotate(
        item_count=Count("items")).order_by("-opened_at", "-id")
    return {
        "project": {"slug": project.slug, "name": project.name},
        "open_rounds": watches,
        # Every item has its judgments: shown as complete, not among the rounds in progress.
        "complete_rounds": [{"id": round.pk, "name": round.name, "task_type": round.task_type,
                             "status": round.status, "items": round.item_count} for round in complete],
        "totals": {
            "rounds": len(watches),
            "items": sum(w["items"] for w in watches),
            "items_completed": sum(w["items_completed"] for w in watches),
            "judgments_counted": sum(w["judgments_counted"] for w in watches),
            "in_flight": sum(w["in_flight"] for w in watches),
            "spend": [{"currency": currency, **entry} for currency, entry in sorted(spend.items())],
        },
        "throughput": throughput(assignments),
        "coverage_target": coverage_target,
        "verified_per_family": verified_per_family(project=project, target=coverage_target),
    }
