"""Rehearse a round before paying anyone: publish it on an in-process fake of the provider, let
simulated workers (configurable accuracy and speed) take and submit its tasks through the real
services, sync and pay against the fake, report what it would cost, and keep nothing.

Everything runs inside one database transaction that is rolled back at the end; the fake lives
only for the rehearsal. Each provider package supplies its rehearsal (its fake, its simulated
workers and the fake's bill) through ``CrowdProvider.rehearsal``; this module knows none of them.
"""
from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction

from annotation import consent
from annotation.models import Assignment, CollectionRound
from annotation.services.submissions import submit_assignment
from kernel.money import format_money

from . import services
from .base import money
from .registry import provider_class

# How much simulated task times spread around the median (sigma of a log-normal).
TIME_SPREAD = 0.35


def simulated_answer(*, assignment: Assignment, rng: random.Random, accuracy: float) -> dict:
    """Answers a simulated worker gives (the task type knows how); on a gold item the right one with
    probability ``accuracy``."""
    return assignment.round.task_type_handler.simulate(assignment=assignment, rng=rng, accuracy=accuracy)


def task_seconds(*, rng: random.Random, median_seconds: float, time_limit: int) -> float:
    return min(median_seconds * math.exp(rng.gauss(0, TIME_SPREAD)), time_limit - 1)


def accept_study_information(*, round: CollectionRound, worker) -> None:
    """A simulated worker reads the round's study information (if any) and agrees, as on the consent page."""
    if not consent.has_accepted(round=round, worker=worker):
        consent.record_decision(round=round, worker=worker, accepted=True)


def save_simulated_answers(*, assignment: Assignment, rng, accuracy: float, started: datetime,
                           seconds: float) -> dict:
    """A simulated worker's answers, stored here as the worker page would store them."""
    answers = simulated_answer(assignment=assignment, rng=rng, accuracy=accuracy)
    submit_assignment(assignment_id=assignment.pk, worker=assignment.worker, data=answers,
                            now=started + timedelta(seconds=seconds))
    return answers


@dataclass
class RehearsalReport:
    provider: str
    tasks_submitted: int = 0
    gold_answers: int = 0
    gold_passed: int = 0
    median_seconds: float | None = None
    effective_hourly_wage: Decimal | None = None
    target_hourly_wage: Decimal = Decimal("0")
    approved: int = 0
    bonuses_paid: int = 0
    rewards: Decimal = Decimal("0.00")
    bonuses: Decimal = Decimal("0.00")
    fees: Decimal = Decimal("0.00")
    estimate_total: Decimal | None = None
    budget_cap: Decimal | None = None
    currency: str = "USD"
    unmatched: list = field(default_factory=list)
    # Why nothing was published (every item of the round complete); empty when the rehearsal ran.
    nothing_to_publish: str = ""

    @property
    def total(self) -> Decimal:
        return money(self.rewards + self.bonuses + self.fees)

    def lines(self) -> list[str]:
        if self.nothing_to_publish:
            return [f"DRY RUN on {self.provider}: {self.nothing_to_publish}; nothing was simulated, approved or paid"]

        def shown(amount):
            return format_money(amount, self.currency)

        wage = "-" if self.effective_hourly_wage is None else shown(self.effective_hourly_wage)
        gold = f"{self.gold_passed}/{self.gold_answers}" if self.gold_answers else "no gold items"
        return [
            f"DRY RUN on {self.provider} (fake; nothing was kept, nobody was paid)",
            f"  tasks submitted: {self.tasks_submitted}; gold answers right: {gold}",
            f"  median task time: {self.median_seconds and round(self.median_seconds, 1)} s; effective wage {wage} "
            f"vs target {shown(self.target_hourly_wage)} {self.currency}/h",
            f"  approved {self.approved}; top-up bonuses paid {self.bonuses_paid}",
            f"  would spend: rewards {shown(self.rewards)} + bonuses {shown(self.bonuses)} + fees {shown(self.fees)} "
            f"= {shown(self.total)} {self.currency} (estimate {shown(self.estimate_total) or 'none'}; "
            f"budget cap {shown(self.budget_cap) or 'none'})",
            f"  submissions seen only at the provider: {len(self.unmatched)}",
        ]


class _Rollback(Exception):
    pass


def rehearse(*, round: CollectionRound, provider_name: str, options: dict | None = None, accuracy: float = 0.9,
             median_seconds: float = 60.0, seed: int | None = None) -> RehearsalReport:
    rng = random.Random(seed)
    report = RehearsalReport(provider=provider_name, target_hourly_wage=round.target_hourly_wage,
                             budget_cap=round.budget_cap, currency=round.currency)
    rehearsal = provider_class(provider_name).rehearsal(seed=seed, currency=round.currency)
    try:
        try:
            with transaction.atomic():
                _rehearse(round=round, rehearsal=rehearsal, options=options or {}, rng=rng,
                          accuracy=accuracy, median_seconds=median_seconds, report=report)
                raise _Rollback  # keep nothing of the rehearsal
        except _Rollback:
            pass
    finally:
        rehearsal.stop()
    return report


def _rehearse(*, round, rehearsal, options, rng, accuracy, median_seconds, report) -> None:
    provider = rehearsal.provider
    providers = {provider.name: provider}
    try:
        services.check_work_to_publish(round=round)
    except services.NothingToPublish as refusal:
        report.nothing_to_publish = refusal.message
        return
    # Work the round already holds is not the rehearsal's: only what it simulates is approved and paid.
    earlier = list(Assignment.objects.filter(round=round).values_list("pk", flat=True))
    result = services.publish_round(round=round, provider_name=provider.name, options=options, provider=provider,
                                    expected_seconds=median_seconds)
    round = CollectionRound.objects.get(pk=round.pk)
    report.estimate_total = Decimal(result.publication.details["estimate"]["total"])
    report.tasks_submitted = rehearsal.simulate_workers(
        round=round, publication=result.publication, rng=rng, accuracy=accuracy, median_seconds=median_seconds)
    sync = services.sync_round(round=round, providers=providers)
    report.unmatched = sync.unmatched
    simulated = Assignment.objects.filter(round=round).exclude(pk__in=earlier)
    only = list(simulated.values_list("pk", flat=True))
    pay = services.pay_round(round=round, top_up=True, providers=providers, only=only)
    report.approved, report.bonuses_paid = pay.approved, pay.bonuses_paid
    if pay.bonuses_unsettled:
        # Payments the platform settles minutes later: let them settle, and the rerun confirms them.
        rehearsal.settle()
        report.bonuses_paid += services.pay_round(round=round, providers=providers, only=only).bonuses_paid
    gold = simulated.filter(gold_passed__isnull=False)
    report.gold_answers, report.gold_passed = gold.count(), gold.filter(gold_passed=True).count()
    durations = list(simulated.submitted().values_list("duration_seconds", flat=True))
    if durations:
        report.median_seconds = statistics.median(durations)
        report.effective_hourly_wage = money(
            (round.reward_per_task + pay.top_up_per_task) * Decimal(3600) / Decimal(str(report.median_seconds)))
    report.rewards, report.bonuses, report.fees = rehearsal.spend(round=round)
