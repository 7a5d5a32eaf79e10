"""The adaptive pairwise sampler under concurrent workers on PostgreSQL: batches are drawn under the
round's row lock, so however many completions race, no batch is drawn twice, the budget holds, the
engine's k distinct workers per item hold, and the round stops itself once.

Carries the ``postgres`` marker (see test_concurrency.py): it fails, never skips, without PostgreSQL.
"""
import random
import threading
from collections import Counter

import pytest
from django.db import connection

from annotation import round_builder
from annotation.models import Assignment, CollectionRound
from annotation.errors import RoundNotOpen
from annotation.services.engine import request_assignment
from annotation.services.rounds import open_round
from annotation.services.submissions import submit_assignment
from projects.services import create_project

from .factories import make_project_outputs, make_worker
from .test_concurrency import require_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 12
WORKERS_PER_ITEM = 2
BUDGET = 1200
TRUTH = {"alpha": 1500.0, "beta": 1150.0, "gamma": 800.0, "delta": 450.0, "epsilon": 100.0}


def test_concurrent_workers_run_an_adaptive_round_to_its_goal(django_user_model):
    require_postgresql()
    owner = django_user_model.objects.create_user(username="owner")
    project = create_project(name="Adaptive", slug="adaptive", owner=owner)
    make_project_outputs(project=project, instances=4, models=tuple(TRUTH))
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=owner, source="model_outputs",
        settings={"name": "adaptive", "task_type": "pairwise", "workers_per_item": WORKERS_PER_ITEM},
        params={"sampler": "adaptive", "budget_judgments": BUDGET, "seed": 11})
    open_round(round=round)
    workers = [make_worker(f"adaptive-{n}") for n in range(THREADS)]
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    stored: list[int] = []

    def work(worker, seed):
        rng = random.Random(seed)
        try:
            start.wait()
            idle = 0
            while idle < 50:
                current = CollectionRound.objects.get(pk=round.pk)
                if current.status == CollectionRound.Status.CLOSED:
                    return
                assignment = request_assignment(round=current, worker=worker)
                if assignment is None:  # the next batch is being drawn, or the round completes
                    idle += 1
                    threading.Event().wait(0.02)
                    continue
                idle = 0
                item = assignment.item
                gap = TRUTH[item.side_b_name] - TRUTH[item.side_a_name]
                winner = "a" if rng.random() < 1 / (1 + 10 ** (gap / 400)) else "b"
                choice = next(side for side in ("left", "right") if assignment.presentation[side] == winner)
                try:
                    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})
                    stored.append(assignment.pk)
                except RoundNotOpen:  # stopped while this task was in flight
                    return
        except RoundNotOpen:
            return
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(worker, n)) for n, worker in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert errors == [], "\n".join(sorted({repr(e) for e in errors}))

    round.refresh_from_db()
    state = round.sampler_state
    assert round.status == CollectionRound.Status.CLOSED and state["stopped"] == "goal met"
    assert state["progress"]["text"] == "4 of 4 adjacent pairs separated"
    # Every batch drawn was recorded exactly once, and within the budget.
    items = round.items.count()
    assert state["issued_judgments"] == items * WORKERS_PER_ITEM <= BUDGET
    assert state["batches"] > 1
    submitted = Assignment.objects.filter(round=round, status=Assignment.Status.SUBMITTED)
    assert sorted(submitted.values_list("pk", flat=True)) == sorted(stored)
    # Judgments the stop saw; a task already past its status check when the round closed may still
    # be stored (at most one per worker).
    assert state["judgments"] <= len(stored) <= state["judgments"] + THREADS
    per_item = Counter(submitted.values_list("item_id", flat=True))
    assert max(per_item.values()) <= WORKERS_PER_ITEM
    assert submitted.values("item_id", "worker_id").distinct().count() == len(stored)
