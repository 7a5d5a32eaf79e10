"""Rehearse a round before paying anyone: publish it on an in-process fake of the provider, let
simulated workers (configurable accuracy and speed) take and submit its tasks through the real
services, sync and pay against the fake, report what it would cost, and keep nothing.

Everything runs inside one database transaction that is rolled back at the end; the fake lives
only for the rehearsal. ``simulate_mturk_worker`` and friends are also what the tests use.
"""
from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation import services as crowd
from annotation.models import Assignment, CollectionRound

from . import services
from .base import money

# How much simulated task times spread around the median (sigma of a log-normal).
TIME_SPREAD = 0.35


def simulated_answer(*, assignment: Assignment, rng: random.Random, accuracy: float) -> dict:
    """Answers a simulated worker gives (the task type knows how); on a gold item the right one with
    probability ``accuracy``."""
    return assignment.round.task_type_handler.simulate(assignment=assignment, rng=rng, accuracy=accuracy)


def task_seconds(*, rng: random.Random, median_seconds: float, time_limit: int) -> float:
    return min(median_seconds * math.exp(rng.gauss(0, TIME_SPREAD)), time_limit - 1)


def _save_here(*, assignment: Assignment, rng, accuracy: float, started: datetime, seconds: float) -> dict:
    answers = simulated_answer(assignment=assignment, rng=rng, accuracy=accuracy)
    crowd.submit_assignment(assignment_id=assignment.pk, worker=assignment.worker, data=answers,
                            now=started + timedelta(seconds=seconds))
    return answers


def simulate_mturk_worker(*, fake, round: CollectionRound, worker_id: str, rng: random.Random, accuracy: float,
                          median_seconds: float, save_here: bool = True) -> int:
    """One MTurk worker takes every HIT of the round they can; returns how many they submitted.

    Like the worker page: accept at MTurk, take the HIT's item here, save here first, then submit at
    MTurk with the answers. ``save_here=False`` drops our save, as when that request is lost.
    """
    from mturk.models import HIT

    from fakes.mturk_server import RehearsalError

    done = 0
    worker = services.get_or_create_provider_worker(provider="mturk", external_id=worker_id)
    for hit in HIT.objects.filter(publication__round=round).select_related("item").order_by("item__position"):
        try:
            assignment_id = fake.accept_assignment(hit.hit_id, worker_id)
        except RehearsalError:
            continue
        started = timezone.now()
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, item=hit.item, provider_assignment_id=assignment_id,
                provider_task_id=hit.hit_id, now=started,
            )
        except crowd.CrowdWorkError:
            assignment = None  # the page would show the reason; the worker returns the HIT
        if assignment is None:
            fake.return_assignment(assignment_id)
            continue
        seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
        if save_here:
            answers = _save_here(assignment=assignment, rng=rng, accuracy=accuracy, started=started, seconds=seconds)
        else:
            answers = simulated_answer(assignment=assignment, rng=rng, accuracy=accuracy)
        from mturk.provider import ANSWERS_FIELD, encode_answers

        fake.submit_assignment(assignment_id, {ANSWERS_FIELD: encode_answers(answers)})
        done += 1
    return done


def simulate_prolific_participant(*, fake, round: CollectionRound, study_id: str, participant_id: str,
                                  rng: random.Random, accuracy: float, median_seconds: float) -> bool:
    """One participant opens the study, does one task here and enters the completion code."""
    from fakes.prolific_server import RehearsalError

    try:
        submission = fake.start_submission(study_id, participant_id)
    except RehearsalError:
        return False
    worker = services.get_or_create_provider_worker(provider="prolific", external_id=participant_id)
    started = timezone.now()
    assignment = services.request_provider_assignment(
        round=round, worker=worker, provider_assignment_id=submission["id"], provider_task_id=study_id, now=started,
    )
    if assignment is None:
        fake.return_submission(submission["id"])
        return False
    seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
    _save_here(assignment=assignment, rng=rng, accuracy=accuracy, started=started, seconds=seconds)
    fake.complete_submission(submission["id"], time_taken=int(seconds))
    return True


def simulate_local_worker(*, round: CollectionRound, username: str, rng: random.Random, accuracy: float,
                          median_seconds: float) -> int:
    user = get_user_model().objects.create_user(username=username)
    worker = crowd.get_or_create_local_worker(user=user)
    done = 0
    while True:
        started = timezone.now()
        assignment = crowd.request_assignment(round=round, worker=worker, now=started)
        if assignment is None:
            return done
        seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
        _save_here(assignment=assignment, rng=rng, accuracy=accuracy, started=started, seconds=seconds)
        done += 1


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

    @property
    def total(self) -> Decimal:
        return money(self.rewards + self.bonuses + self.fees)

    def lines(self) -> list[str]:
        wage = "-" if self.effective_hourly_wage is None else f"{self.effective_hourly_wage}"
        gold = f"{self.gold_passed}/{self.gold_answers}" if self.gold_answers else "no gold items"
        return [
            f"DRY RUN on {self.provider} (fake; nothing was kept, nobody was paid)",
            f"  tasks submitted: {self.tasks_submitted}; gold answers right: {gold}",
            f"  median task time: {self.median_seconds and round(self.median_seconds, 1)} s; effective wage {wage} "
            f"vs target {self.target_hourly_wage} {self.currency}/h",
            f"  approved {self.approved}; top-up bonuses paid {self.bonuses_paid}",
            f"  would spend: rewards {self.rewards} + bonuses {self.bonuses} + fees {self.fees} = {self.total} "
            f"{self.currency} (estimate {self.estimate_total}; budget cap {self.budget_cap or 'none'})",
            f"  submissions seen only at the provider: {len(self.unmatched)}",
        ]


class _Rollback(Exception):
    pass


def rehearse(*, round: CollectionRound, provider_name: str, options: dict | None = None, accuracy: float = 0.9,
             median_seconds: float = 60.0, seed: int | None = None) -> RehearsalReport:
    rng = random.Random(seed)
    report = RehearsalReport(provider=provider_name, target_hourly_wage=round.target_hourly_wage,
                             budget_cap=round.budget_cap, currency=round.currency)
    fake = _start_fake(provider_name, seed, round.currency)
    try:
        provider = _provider_on(provider_name, fake)
        try:
            with transaction.atomic():
                _rehearse(round=round, provider=provider, fake=fake, options=options or {}, rng=rng,
                          accuracy=accuracy, median_seconds=median_seconds, report=report)
                raise _Rollback  # keep nothing of the rehearsal
        except _Rollback:
            pass
    finally:
        if fake is not None:
            fake.stop()
    return report


def _start_fake(provider_name: str, seed: int | None, currency: str):
    if provider_name == "mturk":
        from fakes.mturk_server import FakeMTurkServer

        return FakeMTurkServer(seed=seed).start()
    if provider_name == "prolific":
        from fakes.prolific_server import FakeProlificServer

        return FakeProlificServer(seed=seed, api_token="dry-run", currency_code=currency).start()
    return None


def _provider_on(provider_name: str, fake):
    if provider_name == "mturk":
        from mturk.provider import MTurkProvider

        return MTurkProvider(endpoint=fake.url, credentials=("dry-run", "dry-run"), retry_pause=0)
    if provider_name == "prolific":
        from .prolific import ProlificProvider

        return ProlificProvider(base_url=f"{fake.url}/api/v1/", token="dry-run", retry_pause=0)
    from .registry import get_provider

    return get_provider(provider_name)


def _rehearse(*, round, provider, fake, options, rng, accuracy, median_seconds, report) -> None:
    providers = {provider.name: provider}
    result = services.publish_round(round=round, provider_name=provider.name, options=options, provider=provider,
                                    expected_seconds=median_seconds)
    round = CollectionRound.objects.get(pk=round.pk)
    report.estimate_total = Decimal(result.publication.details["estimate"]["total"])
    if provider.name == "mturk":
        for number in range(round.workers_per_item):
            report.tasks_submitted += simulate_mturk_worker(
                fake=fake, round=round, worker_id=f"ADRYRUN{number + 1:06d}", rng=rng, accuracy=accuracy,
                median_seconds=median_seconds)
    elif provider.name == "prolific":
        for number in range(round.items.count() * round.workers_per_item):
            report.tasks_submitted += simulate_prolific_participant(
                fake=fake, round=round, study_id=result.publication.external_id,
                participant_id=f"dryrun{number + 1:018d}", rng=rng, accuracy=accuracy, median_seconds=median_seconds)
    else:
        for number in range(round.workers_per_item):
            report.tasks_submitted += simulate_local_worker(
                round=round, username=f"dry-run-worker-{round.pk}-{number + 1}", rng=rng, accuracy=accuracy,
                median_seconds=median_seconds)
    sync = services.sync_round(round=round, providers=providers)
    report.unmatched = sync.unmatched
    pay = services.pay_round(round=round, top_up=True, providers=providers)
    report.approved, report.bonuses_paid = pay.approved, pay.bonuses_paid
    gold = Assignment.objects.filter(round=round, gold_passed__isnull=False)
    report.gold_answers, report.gold_passed = gold.count(), gold.filter(gold_passed=True).count()
    durations = list(Assignment.objects.submitted().filter(round=round).values_list("duration_seconds", flat=True))
    if durations:
        report.median_seconds = statistics.median(durations)
        report.effective_hourly_wage = money(
            (round.reward_per_task + pay.top_up_per_task) * Decimal(3600) / Decimal(str(report.median_seconds)))
    _spend_from_fake(provider.name, fake, round, report)


def _spend_from_fake(name: str, fake, round, report: RehearsalReport) -> None:
    from .models import BonusPayment

    if name == "mturk":
        ledger = fake.ledger()
        report.rewards = money(sum((Decimal(e.amount) for e in ledger if e.kind == "reward"), Decimal("0")))
        report.bonuses = money(sum((Decimal(e.amount) for e in ledger if e.kind == "bonus"), Decimal("0")))
        report.fees = money(sum((Decimal(e.fee) for e in ledger), Decimal("0")))
    elif name == "prolific":
        payments = fake.payments()
        report.rewards = money(Decimal(sum(p.amount for p in payments if p.kind != "bonus")) / 100)
        report.bonuses = money(Decimal(sum(p.amount for p in payments if p.kind == "bonus")) / 100)
        report.fees = money(Decimal(sum(p.fees for p in payments)) / 100)
    else:
        approved = Assignment.objects.filter(round=round, review_status=Assignment.ReviewStatus.APPROVED).count()
        report.rewards = money(round.reward_per_task * approved)
        report.bonuses = money(sum(BonusPayment.objects.filter(
            assignment__round=round, status=BonusPayment.Status.PAID).values_list("amount", flat=True), Decimal("0")))
