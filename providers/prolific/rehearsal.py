"""Simulated Prolific participants against the in-process fake of Prolific's API."""
from __future__ import annotations

import random
from decimal import Decimal

from django.utils import timezone

from annotation.models import CollectionRound
from fakes.prolific import FakeProlificServer, RehearsalError

from .. import services
from ..base import Rehearsal, money
from ..dry_run import accept_study_information, save_simulated_answers, task_seconds


def simulate_prolific_participant(*, fake, round: CollectionRound, study_id: str, participant_id: str,
                                  rng: random.Random, accuracy: float, median_seconds: float,
                                  provider=None) -> bool:
    """One participant opens the study, does one task here and enters the completion code."""
    try:
        submission = fake.start_submission(study_id, participant_id)
    except RehearsalError:
        return False
    worker = services.get_or_create_provider_worker(provider="prolific", external_id=participant_id)
    accept_study_information(round=round, worker=worker)
    started = timezone.now()
    assignment = services.request_provider_assignment(
        round=round, worker=worker, provider_assignment_id=submission["id"], provider_task_id=study_id, now=started,
        provider=provider,
    )
    if assignment is None:
        fake.return_submission(submission["id"])
        return False
    seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
    save_simulated_answers(assignment=assignment, rng=rng, accuracy=accuracy, started=started, seconds=seconds)
    fake.complete_submission(submission["id"], time_taken=int(seconds))
    return True


class ProlificRehearsal(Rehearsal):
    def __init__(self, *, provider_class, seed, currency):
        self.fake = FakeProlificServer(seed=seed, api_token="dry-run", currency_code=currency).start()
        self.provider = provider_class(base_url=f"{self.fake.url}/api/v1/", token="dry-run", retry_pause=0,
                                       workspace_id=self.fake.workspace_id)

    def simulate_workers(self, *, round, publication, rng, accuracy, median_seconds) -> int:
        return sum(
            simulate_prolific_participant(fake=self.fake, round=round, study_id=publication.external_id,
                                          participant_id=f"dryrun{number + 1:018d}", rng=rng, accuracy=accuracy,
                                          median_seconds=median_seconds, provider=self.provider)
            for number in range(round.items.count() * round.workers_per_item)
        )

    def settle(self) -> None:
        self.fake.settle_bonus_payments()

    def spend(self, *, round):
        payments = self.fake.payments()
        return (money(Decimal(sum(p.amount for p in payments if p.kind != "bonus")) / 100),
                money(Decimal(sum(p.amount for p in payments if p.kind == "bonus")) / 100),
                money(Decimal(sum(p.fees for p in payments)) / 100))

    def stop(self) -> None:
        self.fake.stop()
