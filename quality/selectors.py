"""Reads of worker quality: the judgments as categorical votes, the majority-level report, and the
project's workers with their stored numbers (the cockpit reads these for a project it has scoped)."""
from __future__ import annotations

import statistics

import pandas as pd
from django.db.models import Q

from annotation.models import Assignment, CollectionRound, Qualification, Worker
from annotation.task_types import get_task_type
from stats.pairwise_agreement import majority_vote_arrays
from stats.worker_quality import leave_one_out_agreement

from .errors import WorkerNotFound
from .models import RoundQuality, WorkerQuality

VOTE_COLUMNS = ["task", "worker", "label", "is_gold", "gold_passed", "duration_seconds"]


def worker_label(worker: Worker) -> str:
    """How a researcher sees a worker: a local worker's user name, or the provider and our own
    number (never the provider's raw worker id)."""
    if worker.provider == Worker.LOCAL and worker.user is not None:
        return worker.user.get_username()
    return f"{worker.provider} worker #{worker.pk}"


def worker_labels(worker_ids) -> dict[int, str]:
    """``worker_label`` of each of these workers, by id (e.g. the annotators an IRR report names)."""
    return {worker.pk: worker_label(worker)
            for worker in Worker.objects.filter(pk__in=set(worker_ids)).select_related("user")}


def round_votes(round: CollectionRound) -> pd.DataFrame:
    """The round's counted judgments, gold included, one row each; ``label`` is the task type's
    categorical reading of the judgment (None for types without one)."""
    handler = get_task_type(round.task_type)
    rows = [
        (a.item_id, a.worker_id, handler.quality_label(a), a.item.is_gold, a.gold_passed, a.duration_seconds)
        for a in Assignment.objects.counted().filter(round=round).select_related("item").order_by("pk")
    ]
    return pd.DataFrame(rows, columns=VOTE_COLUMNS)


def agreement_report(*, round: CollectionRound | None = None) -> dict:
    """Majority levels of the human pairwise judgments (gold left out) and each worker's agreement:
    with the majority their own vote is part of (the usual crowd agreement rate) and leave-one-out."""
    from annotation.selectors import pairwise_battles

    battles = pairwise_battles(round)
    report = {"round": round.pk if round is not None else None, "pairs": 0, "judgments": len(battles),
              "levels": {}, "ties": 0, "workers": []}
    if battles.empty:
        return report
    votes = majority_vote_arrays(battles["item_id"].to_numpy(), battles["winner"].to_numpy(),
                                 battles["worker_id"].to_numpy())
    loo = leave_one_out_agreement(battles["item_id"].to_numpy(), battles["winner"].to_numpy(),
                                  battles["worker_id"].to_numpy())
    report["pairs"] = len(votes.pairs)
    report["levels"] = {str(level): int(n) for level, n in votes.level_counts().items() if n}
    report["ties"] = int(votes.pairs["tie"].sum())
    labels = {w.pk: worker_label(w) for w in Worker.objects.filter(pk__in=list(loo.index)).select_related("user")}
    for worker_id, row in votes.workers.iterrows():
        loo_row = loo.loc[worker_id]
        report["workers"].append({
            "worker": labels[int(worker_id)],
            "votes": int(row["votes"]),
            "agreement": _number(row["agreement"]),
            "loo_scored": int(loo_row["scored"]),
            "loo_agreement": _number(loo_row["agreement"]),
        })
    report["workers"].sort(key=lambda entry: entry["worker"])
    return report


def _number(value) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)


# --- the cockpit's reads for one (already scoped) project -------------------------------------


def _of_project(project) -> Q:
    return Q(pk__in=Assignment.objects.filter(round__project=project).values("worker")) | Q(
        pk__in=Qualification.objects.filter(project=project).values("worker"))


def project_workers(project) -> list[dict]:
    """Workers who took tasks in the project's rounds or are qualified for it (an owner may have
    made them before any round), with their numbers over those rounds."""
    workers = Worker.objects.filter(_of_project(project)).select_related("user").distinct()
    stored = {}
    for row in WorkerQuality.objects.filter(round__project=project):
        stored.setdefault(row.worker_id, []).append(row)
    counted = Assignment.objects.counted().filter(round__project=project)
    durations = {}
    for worker_id, seconds in counted.filter(duration_seconds__isnull=False).values_list("worker", "duration_seconds"):
        durations.setdefault(worker_id, []).append(seconds)
    tasks = {}
    for worker_id in counted.values_list("worker", flat=True):
        tasks[worker_id] = tasks.get(worker_id, 0) + 1
    rows = [{"worker": worker, "label": worker_label(worker), "tasks": tasks.get(worker.pk, 0),
             "median_seconds": statistics.median(durations[worker.pk]) if worker.pk in durations else None,
             **combined(stored.get(worker.pk, []))} for worker in workers]
    return sorted(rows, key=lambda row: row["label"])


def combined(rows: list[WorkerQuality]) -> dict:
    """Numbers of several rounds pooled: counts summed, shares weighted by what they were computed on."""
    gold_answers = sum(r.gold_answers for r in rows)
    gold_passed = sum(r.gold_passed for r in rows)
    scored = sum(r.agreement_scored for r in rows)
    agreed = sum((r.agreement or 0) * r.agreement_scored for r in rows)
    weighted = [(r.reliability, r.judgments) for r in rows if r.reliability is not None and r.judgments]
    weight = sum(n for _value, n in weighted)
    return {
        "gold_answers": gold_answers,
        "gold_passed": gold_passed,
        "gold_accuracy": gold_passed / gold_answers if gold_answers else None,
        "agreement_scored": scored,
        "agreement": agreed / scored if scored else None,
        "reliability": sum(value * n for value, n in weighted) / weight if weight else None,
        "computed": bool(rows),
    }


def project_worker(project, worker_id) -> Worker:
    """A worker of the project's rounds (404 otherwise: another project's workers are not found)."""
    try:
        worker_id = int(worker_id)
    except (TypeError, ValueError):
        raise WorkerNotFound() from None
    worker = Worker.objects.filter(_of_project(project), pk=worker_id).select_related("user").distinct().first()
    if worker is None:
        raise WorkerNotFound()
    return worker


def worker_history(project, worker: Worker) -> dict:
    """The worker's assignments in the project's rounds (newest first) and stored numbers per round."""
    assignments = (Assignment.objects.filter(round__project=project, worker=worker)
                   .select_related("round", "item").order_by("-accepted_at", "-pk"))
    per_round = list(WorkerQuality.objects.filter(round__project=project, worker=worker).select_related("round"))
    counted = Assignment.objects.counted().filter(round__project=project, worker=worker)
    durations = list(counted.filter(duration_seconds__isnull=False).values_list("duration_seconds", flat=True))
    return {
        "assignments": assignments,
        "per_round": per_round,
        "totals": {**combined(per_round), "tasks": counted.count(),
                   "median_seconds": statistics.median(durations) if durations else None},
    }


def round_quality(round: CollectionRound) -> RoundQuality | None:
    return RoundQuality.objects.filter(round=round).first()
