"""Crowd rounds answered through the real engine, for the quality tests."""
from __future__ import annotations

import random

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment


def side_choice(assignment, wanted: str) -> dict:
    """The pairwise answer that picks item side ``wanted`` ("a"/"b") whatever the left/right order."""
    return {"choice": next(side for side in ("left", "right") if assignment.presentation[side] == wanted)}


def answer_all(round, workers, answer) -> list:
    """Each worker takes and submits tasks until none is left; ``answer(worker, assignment)`` gives the data."""
    done = []
    for worker in workers:
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            submit_assignment(assignment_id=assignment.pk, worker=worker,
                                       data=answer(worker, assignment))
            done.append(assignment)
    return done


def simulated(accuracy: float = 1.0, seed: int = 3):
    """An ``answer`` that lets the task type simulate a worker (right on gold with ``accuracy``)."""
    rng = random.Random(seed)

    def answer(worker, assignment):
        return assignment.round.task_type_handler.simulate(assignment=assignment, rng=rng, accuracy=accuracy)

    return answer
