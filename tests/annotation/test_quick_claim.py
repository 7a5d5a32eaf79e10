"""The engine's one-step claim of the next free item (``services.engine._claim_first_free_item``): its
conditional insert re-checks the slots, and whatever it cannot settle goes to the careful path."""
import random
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment
from annotation.services import engine
from annotation.services.engine import request_assignment
from annotation.services.submissions import return_assignment, submit_assignment
from annotation.task_types import get_task_type

from .factories import make_candidate, make_round, make_worker

# Database behaviour (the claim's conditional INSERT, raw SQL): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

VERIFY_OK = {"outcome": "correct", "harmful": False, "comment": ""}


def verification_round(items=2, workers_per_item=1, **options):
    return make_round(task_type="verification", targets=[make_candidate() for _ in range(items)],
                      workers_per_item=workers_per_item, **options)


def unsaved_assignment(*, round, item, worker):
    return engine._new_assignment(
        round=round, item=item, worker=worker, now=timezone.now(), rng=random.Random(1),
        handler=get_task_type(round.task_type), provider_assignment_id="", provider_task_id="")


def test_the_conditional_insert_refuses_an_item_whose_slots_are_taken():
    round = verification_round(items=1, workers_per_item=1)
    first, second = make_worker(), make_worker()
    taken = request_assignment(round=round, worker=first)
    late = unsaved_assignment(round=round, item=taken.item, worker=second)

    assert engine._insert_if_slot_free(late, needed=1) is False
    assert late.pk is None
    assert list(Assignment.objects.values_list("worker", flat=True)) == [first.pk]

    assert engine._insert_if_slot_free(late, needed=2) is True
    stored = Assignment.objects.get(pk=late.pk)
    assert (stored.worker_id, stored.item_id, stored.status) == (second.pk, taken.item_id, Assignment.Status.ASSIGNED)
    assert stored.presentation == late.presentation and stored.expires_at == late.expires_at


def test_the_conditional_insert_refuses_an_item_the_worker_already_did():
    round = verification_round(items=1, workers_per_item=3)
    worker = make_worker()
    done = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=done.pk, worker=worker, data=VERIFY_OK)

    again = unsaved_assignment(round=round, item=done.item, worker=worker)
    assert engine._insert_if_slot_free(again, needed=3) is False
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_a_rejected_or_returned_assignment_frees_its_slot_for_the_conditional_insert():
    round = verification_round(items=1, workers_per_item=1)
    first, second = make_worker(), make_worker()
    taken = request_assignment(round=round, worker=first)
    return_assignment(assignment_id=taken.pk, worker=first)

    assert engine._insert_if_slot_free(unsaved_assignment(round=round, item=taken.item, worker=second), needed=1)


def test_an_expired_assignment_holds_its_slot_until_nothing_else_is_free():
    round = verification_round(items=2, workers_per_item=1, time_limit_seconds=60)
    slow, other, third = make_worker(), make_worker(), make_worker()
    start = timezone.now()
    stale = request_assignment(round=round, worker=slow, now=start)
    later = start + timedelta(seconds=61)

    # Another item is free: the quick claim takes it and leaves the stale assignment alone.
    fresh = request_assignment(round=round, worker=other, now=later)
    assert fresh.item_id != stale.item_id
    stale.refresh_from_db()
    assert stale.status == Assignment.Status.ASSIGNED

    # Nothing else is free: the careful path expires the stale assignment and hands out its item.
    replacement = request_assignment(round=round, worker=third, now=later)
    assert replacement is not None and replacement.item_id == stale.item_id
    stale.refresh_from_db()
    assert stale.status == Assignment.Status.EXPIRED


def test_a_worker_whose_own_task_expired_gets_a_new_one():
    round = verification_round(items=2, workers_per_item=1, time_limit_seconds=60)
    worker = make_worker()
    start = timezone.now()
    first = request_assignment(round=round, worker=worker, now=start)

    second = request_assignment(round=round, worker=worker, now=start + timedelta(seconds=61))
    assert second is not None and second.pk != first.pk
    first.refresh_from_db()
    assert first.status == Assignment.Status.EXPIRED
