"""Writes of worker quality: recompute and store a round's numbers from its counted judgments.

The command ``worker_quality``, the Celery task and the cockpit all call ``recompute_round_quality``.
"""
from __future__ import annotations

import logging
import statistics

import pandas as pd
from django.db import transaction

from annotation.models import CollectionRound
from stats.pairwise_agreement import majority_vote_arrays
from stats.worker_quality import dawid_skene, leave_one_out_agreement

from .models import RoundQuality, WorkerQuality
from .selectors import round_votes

logger = logging.getLogger(__name__)


def recompute_round_quality(*, round: CollectionRound) -> RoundQuality:
    """Gold accuracy, leave-one-out agreement, median time and Dawid–Skene reliability of every
    worker of the round, and the round's majority levels beside the reliability-weighted labels.
    Gold items score workers only; agreement and reliability are computed on the other items."""
    votes = round_votes(round)
    labelled = votes[~votes["is_gold"] & votes["label"].notna()]
    loo = reliability = None
    summary = {"items": 0, "levels": {}, "ties": 0, "weighted_differs": 0}
    if not labelled.empty:
        task, label, worker = (labelled[c].to_numpy() for c in ("task", "label", "worker"))
        loo = leave_one_out_agreement(task, label, worker)
        majority = majority_vote_arrays(task, label)
        summary.update(items=len(majority.pairs), ties=int(majority.pairs["tie"].sum()),
                       levels={str(k): int(n) for k, n in majority.level_counts().items() if n})
        if labelled["worker"].nunique() >= 2:
            model = dawid_skene(labelled)
            reliability = model.workers
            summary["weighted_differs"] = model.differing_tasks
    with transaction.atomic():
        WorkerQuality.objects.filter(round=round).delete()
        rows = []
        for worker_id, mine in votes.groupby("worker"):
            gold = mine[mine["is_gold"]]
            passed = int((gold["gold_passed"] == True).sum())  # noqa: E712  (None is not a pass)
            durations = mine["duration_seconds"].dropna().tolist()
            row = WorkerQuality(
                round=round, worker_id=int(worker_id), judgments=len(mine),
                gold_answers=len(gold), gold_passed=passed,
                gold_accuracy=passed / len(gold) if len(gold) else None,
                median_seconds=statistics.median(durations) if durations else None,
            )
            if loo is not None and worker_id in loo.index:
                row.agreement_scored = int(loo.at[worker_id, "scored"])
                value = loo.at[worker_id, "agreement"]
                row.agreement = None if pd.isna(value) else float(value)
            if reliability is not None and worker_id in reliability.index:
                row.reliability = float(reliability[worker_id])
            rows.append(row)
        WorkerQuality.objects.bulk_create(rows)
        quality, _created = RoundQuality.objects.update_or_create(round=round, defaults=summary)
    logger.info("round %s: quality of %d workers recomputed", round.pk, len(rows))
    return quality


def recompute_project_quality(*, project) -> list[RoundQuality]:
    return [recompute_round_quality(round=round) for round in project.rounds.order_by("pk")]
