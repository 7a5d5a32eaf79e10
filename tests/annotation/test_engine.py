"""The assignment engine: distinct workers, capacity, refresh, expiry, qualification and budget."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.errors import AssignmentNotActive, InvalidTransition, NotQualified, RoundNotOpen
from annotation.models import Assignment, CollectionRound
from annotation.services.engine import expire_stale_assignments, request_assignment
from annotation.services.review import reject_assignment
from annotation.services.rounds import add_items, cancel_round, close_round, create_round, open_round
from annotation.services.submissions import return_assignment, submit_assignment

from .factories import make_candidate, make_round, make_worker

pytestmark = pytest.mark.django_db

VERIFY_OK = {"outcome": "correct", "harmful": False, "comment": ""}


def verification_round(items=2, workers_per_item=2, **options):
    return make_round(
        task_type="verification", targets=[make_candidate() for _ in range(items)],
        workers_per_item=workers_per_item, **options,
    )


def test_workers_fill_an_item_before_the_next_and_never_beyond_the_requested_count():
    round = verification_round(items=2, workers_per_item=2)
    workers = [make_worker() for _ in range(5)]
    items = [request_assignment(round=round, worker=w) for w in workers]
    positions = [a.item.position if a else None for a in items]
    assert positions == [0, 0, 1, 1, None]


def test_a_worker_with_an_open_assignment_gets_the_same_one_back():
    round = verification_round()
    worker = make_worker()
    first = request_assignment(round=round, worker=worker)
    again = request_assignment(round=round, worker=worker)
    assert again.pk == first.pk
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_a_worker_never_gets_an_item_twice():
    round = verification_round(items=3, workers_per_item=3)
    worker = make_worker()
    seen = []
    while (assignment := request_assignment(round=round, worker=worker)) is not None:
        seen.append(assignment.item_id)
        submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK)
    assert len(seen) == 3 == len(set(seen))


def test_abandoned_assignments_expire_and_free_their_slot():
    round = verification_round(items=1, workers_per_item=1, time_limit_seconds=60)
    slow, other = make_worker(), make_worker()
    start = timezone.now()
    taken = request_assignment(round=round, worker=slow, now=start)
    assert request_assignment(round=round, worker=other, now=start + timedelta(seconds=30)) is None

    later = start + timedelta(seconds=61)
    replacement = request_assignment(round=round, worker=other, now=later)
    assert replacement is not None and replacement.item_id == taken.item_id
    taken.refresh_from_db()
    assert taken.status == Assignment.Status.EXPIRED
    with pytest.raises(AssignmentNotActive):
        submit_assignment(assignment_id=taken.pk, worker=slow, data=VERIFY_OK, now=later)
    taken.refresh_from_db()
    assert taken.payload is None


def test_expire_stale_assignments_can_run_on_its_own():
    round = verification_round(items=2, workers_per_item=1, time_limit_seconds=60)
    start = timezone.now()
    request_assignment(round=round, worker=make_worker(), now=start)
    request_assignment(round=round, worker=make_worker(), now=start)
    assert expire_stale_assignments(now=start + timedelta(seconds=59)) == 0
    assert expire_stale_assignments(now=start + timedelta(seconds=61)) == 2


def test_returned_tasks_go_to_someone_else():
    round = verification_round(items=1, workers_per_item=1)
    quitter, other = make_worker(), make_worker()
    taken = request_assignment(round=round, worker=quitter)
    return_assignment(assignment_id=taken.pk, worker=quitter)
    assert request_assignment(round=round, worker=quitter) is None
    assert request_assignment(round=round, worker=other).item_id == taken.item_id


def test_rejected_submission_frees_a_slot_before_the_item_completes():
    round = verification_round(items=1, workers_per_item=2)
    first, second, third = make_worker(), make_worker(), make_worker()
    a = request_assignment(round=round, worker=first)
    submit_assignment(assignment_id=a.pk, worker=first, data=VERIFY_OK)
    request_assignment(round=round, worker=second)
    assert request_assignment(round=round, worker=third) is None
    reject_assignment(assignment=a, feedback="copied answer")
    assert request_assignment(round=round, worker=third) is not None


def test_rounds_that_are_not_open_give_no_work():
    round = verification_round(open=False)
    worker = make_worker()
    with pytest.raises(RoundNotOpen):
        request_assignment(round=round, worker=worker)
    open_round(round=round)
    assert request_assignment(round=round, worker=worker) is not None
    close_round(round=round)
    with pytest.raises(RoundNotOpen):
        request_assignment(round=round, worker=worker)


def test_lifecycle_transitions_are_checked():
    empty = create_round(name="empty", task_type="verification")
    with pytest.raises(InvalidTransition):
        open_round(round=empty)
    with pytest.raises(InvalidTransition):
        close_round(round=empty)
    assert cancel_round(round=empty).status == CollectionRound.Status.CANCELLED
    with pytest.raises(InvalidTransition):
        add_items(round=empty, targets=[make_candidate()])


def test_qualification_rules():
    round = verification_round(items=3, workers_per_item=1, qualification_rules={"providers": ["prolific"]})
    with pytest.raises(NotQualified):
        request_assignment(round=round, worker=make_worker())

    round = verification_round(items=3, workers_per_item=1, qualification_rules={"min_approved_tasks": 1})
    newcomer = make_worker()
    with pytest.raises(NotQualified):
        request_assignment(round=round, worker=newcomer)

    capped = verification_round(items=3, workers_per_item=1, qualification_rules={"max_tasks_per_worker": 1})
    worker = make_worker()
    a = request_assignment(round=capped, worker=worker)
    submit_assignment(assignment_id=a.pk, worker=worker, data=VERIFY_OK)
    assert request_assignment(round=capped, worker=worker) is None

    blocked = make_worker()
    blocked.is_blocked = True
    blocked.save()
    with pytest.raises(NotQualified):
        request_assignment(round=capped, worker=blocked)


def test_unknown_qualification_rules_are_refused():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        create_round(name="r", task_type="verification", qualification_rules={"iq": 150})
    with pytest.raises(ValidationError):
        create_round(name="r", task_type="no-such-type")


def test_budget_cap_limits_the_assignments_taken():
    round = verification_round(items=3, workers_per_item=1, reward_per_task=Decimal("0.50"), budget_cap=Decimal("1.00"))
    taken = [request_assignment(round=round, worker=make_worker()) for _ in range(3)]
    assert [a is not None for a in taken] == [True, True, False]
