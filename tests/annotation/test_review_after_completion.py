"""Recording reviews: a submission is approved or rejected once; rejecting a judgment of a completed
item recomputes its aggregate and, while the round is open, opens the item again."""
from __future__ import annotations

import pytest

from annotation.errors import InvalidTransition
from annotation.models import Assignment, CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.review import approve_assignment, reject_assignment
from annotation.services.rounds import close_round
from annotation.services.submissions import submit_assignment
from datasets_app.models import AcceptedReference, Instance, Verification

from .factories import make_candidate, make_instance, make_outputs, make_round, make_worker

# Database behaviour (aggregates recomputed in the database): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


def submit(round, data):
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=data)
    assignment.refresh_from_db()
    return assignment


def test_rejecting_a_judgment_of_a_completed_item_reopens_it_and_recomputes_the_aggregate():
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=make_instance())], workers_per_item=2)
    first = submit(round, {"choice": "left"})
    second = submit(round, {"choice": "left"})
    item = round.items.get()
    assert item.completed_at is not None and item.aggregate_result["judgments"] == 2

    reject_assignment(assignment=second, feedback="random clicking")
    item.refresh_from_db()
    assert item.completed_at is None
    assert item.aggregate_result["judgments"] == 1
    assert item.aggregate_result["winner"] == first.result["winner"]
    # The slot is free again: a third worker gets the item and completes it.
    third = submit(round, {"choice": "right"})
    item.refresh_from_db()
    assert third.item_id == item.pk and item.completed_at is not None
    assert item.aggregate_result["judgments"] == 2


def test_rejecting_after_the_round_closed_keeps_the_item_completed_with_the_new_aggregate():
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=make_instance())], workers_per_item=2)
    submit(round, {"choice": "left"})
    second = submit(round, {"choice": "right"})
    close_round(round=round)
    reject_assignment(assignment=second)
    item = round.items.get()
    assert item.completed_at is not None and item.aggregate_result["judgments"] == 1


def test_a_rejected_verdict_goes_back_to_verification_while_the_round_is_open():
    candidate = make_candidate()
    round = make_round(task_type="verification", targets=[candidate])
    judged = submit(round, {"outcome": "correct"})
    instance = Instance.objects.get(pk=candidate.instance_id)
    assert instance.status == Instance.Status.VERIFIED and AcceptedReference.objects.filter(instance=instance).exists()

    reject_assignment(assignment=judged)
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_VERIFICATION
    assert not AcceptedReference.objects.filter(instance=instance).exists()
    assert not Verification.objects.filter(candidate=candidate, is_aggregate=True).exists()
    submit(round, {"outcome": "response_problem"})
    instance.refresh_from_db()
    assert (instance.status, instance.discard_reason) == (Instance.Status.DISCARDED, "response")


def test_a_verdict_revised_after_the_round_closed():
    candidate = make_candidate()
    round = make_round(task_type="verification", targets=[candidate], workers_per_item=3)
    votes = [submit(round, {"outcome": outcome}) for outcome in ("correct", "caption_problem", "caption_problem")]
    instance = Instance.objects.get(pk=candidate.instance_id)
    assert (instance.status, instance.discard_reason) == (Instance.Status.DISCARDED, "caption")
    close_round(round=round)
    reject_assignment(assignment=votes[1])
    instance.refresh_from_db()
    # One correct, one caption problem: no majority any more.
    assert (instance.status, instance.discard_reason) == (Instance.Status.DISCARDED, "unverified")
    reject_assignment(assignment=votes[2])
    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED
    assert round.items.get().aggregate_result["outcome"] == "correct"


@pytest.mark.parametrize("first, then", [("approve", "reject"), ("reject", "approve")])
def test_a_review_is_recorded_once(first, then):
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=make_instance())])
    assignment = submit(round, {"choice": "left"})
    review = {"approve": approve_assignment, "reject": reject_assignment}
    done = review[first](assignment=assignment)
    assert review[first](assignment=assignment).review_status == done.review_status  # a repeat is a no-op
    with pytest.raises(InvalidTransition) as refused:
        review[then](assignment=assignment)
    assert refused.value.status_code == 409
    assignment.refresh_from_db()
    assert assignment.review_status == done.review_status


def test_only_submitted_assignments_are_reviewed():
    round = make_round(task_type="pairwise", targets=[make_outputs(instance=make_instance())])
    open_assignment = request_assignment(round=round, worker=make_worker())
    with pytest.raises(InvalidTransition):
        reject_assignment(assignment=open_assignment)
    assert Assignment.objects.get(pk=open_assignment.pk).review_status == ""
    assert round.status == CollectionRound.Status.OPEN
