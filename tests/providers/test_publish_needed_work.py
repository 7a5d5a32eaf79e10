"""Publishing offers only the work a round still needs: item-slots whose judgments are not in yet.
A finished round publishes nothing, on any provider or in a dry run, and says so."""
from __future__ import annotations

import random

import pytest

from annotation.models import Assignment, CollectionRound
from annotation.selectors import slots_still_needed
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from providers import services
from providers.dry_run import rehearse
from providers.local.rehearsal import simulate_local_worker
from providers.models import Publication
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider
from tests.annotation.factories import make_worker

pytestmark = pytest.mark.django_db


def local_workers_do(round, count):
    for number in range(count):
        simulate_local_worker(round=round, username=f"local-{round.pk}-{number}", rng=random.Random(number),
                              accuracy=1.0, median_seconds=60)
    round.refresh_from_db()
    return round


def finished_round(round_factory):
    round = local_workers_do(round_factory(items=3, workers_per_item=2), 2)
    assert round.status == CollectionRound.Status.COMPLETE
    return round


def half_done_round(round_factory):
    """Four items of two workers each: the first two items done, the third with one judgment of two."""
    round = round_factory(items=4, workers_per_item=2)
    for number in range(2):
        worker = make_worker()
        for _ in range(2 if number == 0 else 3):
            assignment = request_assignment(round=round, worker=worker)
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    return round


def test_slots_still_needed_counts_only_judgments_not_yet_in(round_factory):
    round = half_done_round(round_factory)
    items = list(round.items.order_by("position").values_list("pk", flat=True))
    # Worker one did items 1 and 2, worker two items 1, 2 and 3: 1 and 2 are complete.
    assert slots_still_needed(round=round) == {items[2]: 1, items[3]: 2}


def test_publishing_a_finished_round_creates_no_hits(mturk_fake, round_factory):
    round = finished_round(round_factory)
    with pytest.raises(services.NothingToPublish, match="all 3 items of the round are complete"):
        services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    assert not mturk_fake.calls("CreateHITWithHITType") and not mturk_fake.calls("CreateHITType")
    assert not Publication.objects.exists()
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE


def test_publishing_a_finished_round_creates_no_prolific_places(prolific_fake, round_factory):
    round = finished_round(round_factory)
    with pytest.raises(services.NothingToPublish, match="nothing to publish"):
        services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    assert not prolific_fake.calls("POST /api/v1/studies/")
    assert not Publication.objects.exists()


def test_a_dry_run_of_a_finished_round_publishes_and_approves_nothing(round_factory):
    round = finished_round(round_factory)
    awaiting = Assignment.objects.filter(round=round, review_status=Assignment.ReviewStatus.SUBMITTED).count()
    assert awaiting == 6  # real work awaiting review: a rehearsal must not count it as its own
    report = rehearse(round=round, provider_name="mturk", median_seconds=60, seed=1)
    assert (report.tasks_submitted, report.approved, report.bonuses_paid) == (0, 0, 0)
    assert report.nothing_to_publish
    assert any("nothing to publish: all 3 items of the round are complete" in line for line in report.lines())
    assert Assignment.objects.filter(round=round, review_status=Assignment.ReviewStatus.SUBMITTED).count() == 6


def test_a_dry_run_approves_only_the_work_it_simulated(round_factory):
    round = half_done_round(round_factory)
    report = rehearse(round=round, provider_name="mturk", median_seconds=60, seed=1)
    # Three slots were still needed; the five real submissions awaiting review are not the rehearsal's.
    assert (report.tasks_submitted, report.approved) == (3, 3)


def test_publishing_a_half_done_round_offers_only_the_slots_still_needed_on_mturk(mturk_fake, round_factory):
    round = half_done_round(round_factory)
    result = services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    assert (result.tasks_created, result.tasks_existing) == (2, 0)
    assert sorted(call.params["MaxAssignments"] for call in mturk_fake.calls("CreateHITWithHITType")) == [1, 2]
    estimate = result.publication.details["estimate"]
    assert estimate["rewards"] == "1.50"  # three tasks of 0.50, not eight


def test_publishing_a_half_done_round_offers_only_the_places_still_needed_on_prolific(prolific_fake, round_factory):
    round = half_done_round(round_factory)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    [created] = prolific_fake.calls("POST /api/v1/studies/")
    assert created.params["body"]["total_available_places"] == 3
