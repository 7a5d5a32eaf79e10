"""Adaptive overlap under concurrent workers on PostgreSQL: no item gets more votes than it needs."""
import random
import threading
from collections import Counter

import pytest
from django.db import connection

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.rounds import overlap_savings
from annotation.services.submissions import submit_assignment
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker

from .rounds import side_choice

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ITEMS, THREADS = 12, 24


def test_concurrent_workers_stop_each_item_once_its_majority_is_settled():
    if connection.vendor != "postgresql":
        pytest.fail(f"this concurrency test needs PostgreSQL, not {connection.vendor}: set DATABASE_URL")
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(ITEMS)]
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=5, min_workers_per_item=3)
    workers = [make_worker(f"adaptive-{n}") for n in range(THREADS)]
    start = threading.Barrier(THREADS)
    errors = []

    def work(worker, seed):
        rng = random.Random(seed)
        try:
            start.wait()
            while (assignment := request_assignment(round=round, worker=worker)) is not None:
                vote = "a" if rng.random() < 0.6 else "b"
                submit_assignment(assignment_id=assignment.pk, worker=worker,
                                           data=side_choice(assignment, vote))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(worker, n)) for n, worker in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for item in round.items.all():
        assert item.completed_at is not None
        votes = Counter(result["winner"] for result in
                        Assignment.objects.counted().filter(item=item).values_list("result", flat=True))
        # Settled exactly when one side reached 3 of 5: never a vote more than needed.
        assert max(votes.values()) == 3 and 3 <= sum(votes.values()) <= 5, votes
    saved = overlap_savings(round=round)
    assert saved["judgments"] == Assignment.objects.counted().filter(round=round).count()
