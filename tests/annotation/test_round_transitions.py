"""Round status: pause stops the hand-out but not submissions in flight, resume, extend, illegal moves."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.errors import AssignmentNotActive, InvalidTransition, RoundNotOpen
from annotation.models import Assignment, CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.rounds import (add_items, allowed_actions, cancel_round, close_round, extend_round,
                                        open_round, pause_round, resume_round)
from annotation.services.submissions import submit_assignment

from .factories import make_candidate, make_round, make_worker

pytestmark = pytest.mark.django_db

VERIFY_OK = {"outcome": "correct", "harmful": False, "comment": ""}


def verification_round(items=3, **options):
    return make_round(task_type="verification", targets=[make_candidate() for _ in range(items)],
                      workers_per_item=1, **options)


def test_a_paused_round_hands_out_nothing_but_takes_work_in_flight():
    round = verification_round()
    busy = make_worker()
    in_flight = request_assignment(round=round, worker=busy)
    round = pause_round(round=round)
    assert round.status == CollectionRound.Status.PAUSED
    with pytest.raises(RoundNotOpen):
        request_assignment(round=round, worker=make_worker())
    outcome = submit_assignment(assignment_id=in_flight.pk, worker=busy, data=VERIFY_OK)
    assert outcome.created and outcome.assignment.status == Assignment.Status.SUBMITTED
    assert Assignment.objects.count() == 1
    round = resume_round(round=round)
    assert round.status == CollectionRound.Status.OPEN
    assert request_assignment(round=round, worker=make_worker()) is not None


def test_a_closed_round_takes_no_submission():
    round = verification_round()
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    pause_round(round=round)
    close_round(round=round)
    with pytest.raises(RoundNotOpen):
        submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK)


@pytest.mark.parametrize("start, action", [
    ("draft", pause_round),
    ("draft", resume_round),
    ("draft", close_round),
    ("open", resume_round),
    ("open", open_round),
    ("paused", pause_round),
    ("paused", open_round),
    ("closed", pause_round),
    ("closed", resume_round),
    ("closed", cancel_round),
    ("cancelled", resume_round),
])
def test_illegal_transitions_are_refused_and_change_nothing(start, action):
    round = verification_round(open=False)
    CollectionRound.objects.filter(pk=round.pk).update(status=start)
    with pytest.raises(InvalidTransition, match="cannot"):
        action(round=round)
    round.refresh_from_db()
    assert round.status == start


def test_allowed_actions_follow_the_status():
    round = verification_round(open=False)
    assert allowed_actions(round) == ["open", "edit", "cancel"]
    with pytest.raises(InvalidTransition, match="cannot extend a round that is draft"):
        extend_round(round=round, time_limit_seconds=4000)
    round = open_round(round=round)
    assert allowed_actions(round) == ["pause", "extend", "widen", "close", "cancel"]
    round = pause_round(round=round)
    assert allowed_actions(round) == ["resume", "extend", "widen", "close", "cancel"]
    round = close_round(round=round)
    assert allowed_actions(round) == []


def test_extend_gives_more_time_to_new_and_running_assignments():
    round = verification_round(time_limit_seconds=600)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    deadline = assignment.expires_at
    round = extend_round(round=round, time_limit_seconds=900)
    assert round.time_limit_seconds == 900
    assignment.refresh_from_db()
    assert assignment.expires_at == deadline + timedelta(seconds=300)
    later = request_assignment(round=round, worker=make_worker())
    assert later.expires_at - later.accepted_at == timedelta(seconds=900)


def test_extend_raises_the_budget_cap_so_work_is_handed_out_again():
    round = verification_round(budget_cap=Decimal("0.50"))  # one task of 0.50
    assert request_assignment(round=round, worker=make_worker()) is not None
    assert request_assignment(round=round, worker=make_worker()) is None
    round = extend_round(round=round, budget_cap=Decimal("1.00"))
    assert request_assignment(round=round, worker=make_worker()) is not None


@pytest.mark.parametrize("changes, message", [
    ({}, "longer time limit or a higher budget cap"),
    ({"time_limit_seconds": 600}, "can only grow"),
    ({"time_limit_seconds": 300}, "can only grow"),
    ({"budget_cap": Decimal("5.00")}, "can only grow"),
    ({"budget_cap": Decimal("1e12")}, "digits"),
])
def test_extend_never_lowers_and_refuses_bad_values(changes, message):
    round = verification_round(time_limit_seconds=600, budget_cap=Decimal("5.00"))
    with pytest.raises(InvalidTransition, match=message):
        extend_round(round=round, **changes)
    round.refresh_from_db()
    assert (round.time_limit_seconds, round.budget_cap) == (600, Decimal("5.00"))


def test_extend_cannot_put_a_cap_on_an_uncapped_round_or_touch_a_closed_one():
    round = verification_round()
    with pytest.raises(InvalidTransition, match="no budget cap"):
        extend_round(round=round, budget_cap=Decimal("3"))
    close_round(round=round)
    with pytest.raises(InvalidTransition, match="cannot extend a round that is closed"):
        extend_round(round=round, time_limit_seconds=4000)


def test_items_can_be_added_to_a_paused_round():
    round = verification_round(items=1)
    pause_round(round=round)
    add_items(round=round, targets=[make_candidate()])
    assert round.items.count() == 2


def test_pause_keeps_expiry_running():
    round = verification_round(time_limit_seconds=60)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    pause_round(round=round)
    with pytest.raises(AssignmentNotActive):
        submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK,
                                   now=timezone.now() + timedelta(seconds=120))
