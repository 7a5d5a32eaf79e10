"""Crowd steps driven through the annotation services, as the worker pages would."""
from __future__ import annotations

from annotation.models import CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import Instance
from tests.annotation.factories import make_worker


def submit_all(*, round: CollectionRound, answers: list[dict], workers=None) -> list:
    """One submission per answer, each by a different worker, on the round's next item."""
    workers = workers or [make_worker() for _ in answers]
    done = []
    for worker, answer in zip(workers, answers):
        assignment = request_assignment(round=round, worker=worker)
        assert assignment is not None, "the round has no work left for this worker"
        done.append(submit_assignment(assignment_id=assignment.pk, worker=worker, data=answer).assignment)
    return done


def caption_instance(*, round: CollectionRound, captions: list[str]):
    return submit_all(round=round, answers=[{"captions": captions}])[0]


def verify(*, round: CollectionRound, outcomes: list[str], harmful: list[bool] | None = None) -> None:
    harmful = harmful or [False] * len(outcomes)
    submit_all(round=round, answers=[{"outcome": o, "harmful": h} for o, h in zip(outcomes, harmful)])


def awaiting_reference(instance: Instance) -> Instance:
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE, instance.status
    return instance
