"""The assignment engine under concurrent requests on PostgreSQL.

SQLite has a single writer (the transaction serialises requests), so there is nothing concurrent to
test there. These tests carry the ``postgres`` marker: ``make test`` runs them against PostgreSQL
even when the rest of the suite uses SQLite, and they fail, never skip, without PostgreSQL.
"""
import threading
from collections import Counter

import pytest
from django.db import connection

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import Verification

from .factories import make_candidate, make_round, make_worker

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ITEMS = 20
WORKERS_PER_ITEM = 3
THREADS = 50


def require_postgresql():
    if connection.vendor != "postgresql":
        pytest.fail(
            f"this concurrency test needs PostgreSQL, but the database is {connection.vendor}: "
            "run it with DATABASE_URL=postgres://... (make test does)"
        )


def test_fifty_workers_at_once_fill_every_item_with_exactly_three_distinct_workers():
    require_postgresql()
    round = make_round(
        task_type="verification", targets=[make_candidate() for _ in range(ITEMS)],
        workers_per_item=WORKERS_PER_ITEM,
    )
    workers = [make_worker(f"concurrent-{n}") for n in range(THREADS)]
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    done_by_thread: dict[int, list[int]] = {}

    def work(worker):
        done = []
        try:
            start.wait()
            while (assignment := request_assignment(round=round, worker=worker)) is not None:
                submit_assignment(
                    assignment_id=assignment.pk, worker=worker, data={"outcome": "correct"}
                )
                done.append(assignment.item_id)
        except BaseException as error:  # reported below, with the thread's worker
            errors.append(error)
        finally:
            done_by_thread[worker.pk] = done
            connection.close()

    threads = [threading.Thread(target=work, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert errors == [], "\n".join(sorted({str(e) for e in errors}))

    submitted = list(Assignment.objects.filter(round=round).values_list("item_id", "worker_id", "status"))
    assert {status for _, _, status in submitted} == {Assignment.Status.SUBMITTED}
    per_item = Counter(item_id for item_id, _, _ in submitted)
    assert len(per_item) == ITEMS
    assert set(per_item.values()) == {WORKERS_PER_ITEM}
    assert len({(item_id, worker_id) for item_id, worker_id, _ in submitted}) == ITEMS * WORKERS_PER_ITEM
    # Nothing lost: what the threads were told they did is exactly what is stored.
    assert sorted(i for done in done_by_thread.values() for i in done) == sorted(i for i, _, _ in submitted)
    assert Verification.objects.filter(is_aggregate=False).count() == ITEMS * WORKERS_PER_ITEM
    assert Verification.objects.filter(is_aggregate=True).count() == ITEMS
    assert not round.items.filter(completed_at__isnull=True).exists()


def test_one_worker_double_requesting_gets_one_assignment():
    require_postgresql()
    round = make_round(task_type="verification", targets=[make_candidate() for _ in range(5)])
    worker = make_worker("double-clicker")
    start = threading.Barrier(8)
    got, errors = [], []

    def ask():
        try:
            start.wait()
            got.append(request_assignment(round=round, worker=worker).pk)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(set(got)) == 1
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_double_submit_at_once_is_stored_once():
    require_postgresql()
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker = make_worker("double-submitter")
    assignment = request_assignment(round=round, worker=worker)
    start = threading.Barrier(6)
    created, errors = [], []

    def send():
        try:
            start.wait()
            outcome = submit_assignment(
                assignment_id=assignment.pk, worker=worker, data={"outcome": "correct"}
            )
            created.append(outcome.created)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(created) == [False] * 5 + [True]
    assert Verification.objects.filter(is_aggregate=False).count() == 1
