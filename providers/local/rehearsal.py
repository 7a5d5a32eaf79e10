"""Simulated local workers: they log in and take tasks through the engine until none is left."""
from __future__ import annotations

import random
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.errors import NotQualified
from annotation.models import Assignment, CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker

from ..base import Rehearsal, money
from ..dry_run import accept_study_information, save_simulated_answers, task_seconds
from ..models import BonusPayment


def simulate_local_worker(*, round: CollectionRound, username: str, rng: random.Random, accuracy: float,
                          median_seconds: float) -> int:
    user = get_user_model().objects.create_user(username=username)
    worker = get_or_create_local_worker(user=user)
    accept_study_information(round=round, worker=worker)
    done = 0
    while True:
        started = timezone.now()
        try:
            assignment = request_assignment(round=round, worker=worker, now=started)
        except NotQualified:
            return done  # the round's quality policy stopped this worker, as it would a person
        if assignment is None:
            return done
        seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
        save_simulated_answers(assignment=assignment, rng=rng, accuracy=accuracy, started=started, seconds=seconds)
        done += 1


class LocalRehearsal(Rehearsal):
    def __init__(self, *, provider):
        self.provider = provider

    def simulate_workers(self, *, round, publication, rng, accuracy, median_seconds) -> int:
        return sum(
            simulate_local_worker(round=round, username=f"dry-run-worker-{round.pk}-{number + 1}", rng=rng,
                                  accuracy=accuracy, median_seconds=median_seconds)
            for number in range(round.workers_per_item)
        )

    def spend(self, *, round):
        approved = Assignment.objects.filter(round=round, review_status=Assignment.ReviewStatus.APPROVED).count()
        bonuses = BonusPayment.objects.filter(assignment__round=round, status=BonusPayment.Status.PAID)
        return (money(round.reward_per_task * approved),
                money(sum(bonuses.values_list("amount", flat=True), Decimal("0"))), Decimal("0.00"))
