"""The demo's crowd: simulated local workers complete some demo rounds through the real engine, so
the dashboard, the leaderboard and the IRR report show real numbers right after ``make demo``.

The workers answer as the dry run's simulated workers do (each task type's ``simulate``), take and
submit tasks through ``annotation.services`` and agree to a round's study information first. Rounds
not named here stay open for people to try.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker, set_worker_languages
from providers.dry_run import accept_study_information, save_simulated_answers, task_seconds

# Demo rounds (keys of ``demo.rounds.create_demo_rounds``) the simulated crowd completes.
COMPLETED_ROUNDS = ("pairwise", "ranking", "ranking_ja", "verification")
CROWD_SIZE = 6
CROWD_USERNAME = "demo-crowd-{:02d}"
ACCURACY = 0.9
MEDIAN_SECONDS = 45.0


@dataclass
class DemoCrowdReport:
    workers: int = 0  # the workers who submitted at least one task now
    submitted: dict[str, int] = field(default_factory=dict)  # round key -> tasks submitted now
    completed_items: dict[str, str] = field(default_factory=dict)  # round key -> "done of items"


def _crowd_workers(size: int) -> list:
    users = get_user_model()
    workers = []
    for number in range(1, size + 1):
        user, created = users.objects.get_or_create(username=CROWD_USERNAME.format(number))
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        worker = get_or_create_local_worker(user=user)
        if not worker.languages:
            worker = set_worker_languages(worker=worker, languages=["en", "ja"])
        workers.append(worker)
    return workers


def _work_round(*, round: CollectionRound, worker, rng: random.Random) -> int:
    """The worker takes and submits tasks of the round until none is left for them."""
    accept_study_information(round=round, worker=worker)
    done = 0
    while True:
        started = timezone.now()
        assignment = request_assignment(round=round, worker=worker, now=started, rng=rng)
        if assignment is None:
            return done
        seconds = task_seconds(rng=rng, median_seconds=MEDIAN_SECONDS, time_limit=round.time_limit_seconds)
        save_simulated_answers(assignment=assignment, rng=rng, accuracy=ACCURACY, started=started, seconds=seconds)
        done += 1


@transaction.atomic
def complete_demo_rounds(*, rounds: dict[str, CollectionRound], seed: int = 0,
                         crowd_size: int = CROWD_SIZE) -> DemoCrowdReport:
    """Simulated workers do every task of the demo rounds in ``COMPLETED_ROUNDS``; a second call finds
    nothing left to do. Returns what was done."""
    rng = random.Random(seed)
    workers = _crowd_workers(crowd_size)
    report = DemoCrowdReport()
    submitting = set()
    for key in COMPLETED_ROUNDS:
        round = rounds.get(key)
        if round is None or round.status != CollectionRound.Status.OPEN:
            continue
        report.submitted[key] = 0
        for worker in workers:
            done = _work_round(round=round, worker=worker, rng=rng)
            report.submitted[key] += done
            if done:
                submitting.add(worker.pk)
        items = round.items.all()
        report.completed_items[key] = f"{items.filter(completed_at__isnull=False).count()} of {items.count()}"
    # The last workers may find every item done before their turn: only those who worked are counted.
    report.workers = len(submitting)
    return report
