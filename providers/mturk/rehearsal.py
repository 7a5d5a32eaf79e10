"""Simulated MTurk workers against the in-process fake of the MTurk API."""
from __future__ import annotations

import random
from decimal import Decimal

from django.utils import timezone

from annotation.errors import CrowdWorkError
from annotation.models import CollectionRound
from fakes.mturk import FakeMTurkServer, RehearsalError
from providers import services
from providers.base import Rehearsal, money
from providers.dry_run import accept_study_information, save_simulated_answers, simulated_answer, task_seconds

from .models import HIT
from .provider import ANSWERS_FIELD, encode_answers


def simulate_mturk_worker(*, fake, round: CollectionRound, worker_id: str, rng: random.Random, accuracy: float,
                          median_seconds: float, save_here: bool = True, provider=None) -> int:
    """One MTurk worker takes every HIT of the round they can; returns how many they submitted.

    Like the worker page: accept at MTurk, take the HIT's item here, save here first, then submit at
    MTurk with the answers. ``save_here=False`` drops our save, as when that request is lost.
    """
    done = 0
    worker = services.get_or_create_provider_worker(provider="mturk", external_id=worker_id)
    accept_study_information(round=round, worker=worker)
    for hit in HIT.objects.filter(publication__round=round).select_related("item").order_by("item__position"):
        try:
            assignment_id = fake.accept_assignment(hit.hit_id, worker_id)
        except RehearsalError:
            continue
        started = timezone.now()
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, item=hit.item, provider_assignment_id=assignment_id,
                provider_task_id=hit.hit_id, now=started, provider=provider,
            )
        except CrowdWorkError:
            assignment = None  # the page would show the reason; the worker returns the HIT
        if assignment is None:
            fake.return_assignment(assignment_id)
            continue
        seconds = task_seconds(rng=rng, median_seconds=median_seconds, time_limit=round.time_limit_seconds)
        if save_here:
            save_simulated_answers(assignment=assignment, rng=rng, accuracy=accuracy, started=started,
                                   seconds=seconds)
            # The page hands MTurk the answers as stored here: an upload is its stored checksum.
            assignment.refresh_from_db(fields=["payload"])
            answers = assignment.payload
        else:
            answers = simulated_answer(assignment=assignment, rng=rng, accuracy=accuracy)
        fake.submit_assignment(assignment_id, {ANSWERS_FIELD: encode_answers(answers)})
        done += 1
    return done


class MTurkRehearsal(Rehearsal):
    def __init__(self, *, provider_class, seed):
        self.fake = FakeMTurkServer(seed=seed).start()
        self.provider = provider_class(endpoint=self.fake.url, credentials=("dry-run", "dry-run"), retry_pause=0)

    def simulate_workers(self, *, round, publication, rng, accuracy, median_seconds) -> int:
        return sum(
            simulate_mturk_worker(fake=self.fake, round=round, worker_id=f"ADRYRUN{number + 1:06d}", rng=rng,
                                  accuracy=accuracy, median_seconds=median_seconds, provider=self.provider)
            for number in range(round.workers_per_item)
        )

    def spend(self, *, round):
        ledger = self.fake.ledger()
        return (money(sum((Decimal(e.amount) for e in ledger if e.kind == "reward"), Decimal("0"))),
                money(sum((Decimal(e.amount) for e in ledger if e.kind == "bonus"), Decimal("0"))),
                money(sum((Decimal(e.fee) for e in ledger), Decimal("0"))))

    def stop(self) -> None:
        self.fake.stop()
