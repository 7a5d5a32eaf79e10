"""Signed task tokens: how a provider worker's page proves who it is without cookies.

MTurk shows our page in an iframe on its own site, where browsers block third-party cookies, so
the page carries a token signed with SECRET_KEY and bound to one assignment and one worker.
"""
from __future__ import annotations

from django.core import signing

from annotation.models import Assignment, Worker
from kernel.errors import ServiceError

SALT = "providers.task-token"
# Beyond the assignment's own time limit, so a slow last click still saves.
GRACE_SECONDS = 3600


class InvalidTaskToken(ServiceError):
    """This task page is no longer valid; reload it."""

    status_code = 403


def task_token(*, assignment: Assignment) -> str:
    return signing.dumps({"a": assignment.pk, "w": assignment.worker_id}, salt=SALT)


def assignment_for_token(*, token: str, assignment_id: int) -> tuple[Assignment, Worker]:
    """The assignment and worker the token was issued for; InvalidTaskToken otherwise."""
    try:
        unsigned = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise InvalidTaskToken("bad task token") from None
    if not isinstance(unsigned, dict) or unsigned.get("a") != assignment_id:
        raise InvalidTaskToken("the task token is for another assignment")
    assignment = Assignment.objects.select_related("round", "worker").filter(
        pk=assignment_id, worker_id=unsigned.get("w")
    ).first()
    if assignment is None:
        raise InvalidTaskToken("unknown assignment")
    try:
        signing.loads(token, salt=SALT, max_age=assignment.round.time_limit_seconds + GRACE_SECONDS)
    except signing.SignatureExpired:
        raise InvalidTaskToken("the task token has expired") from None
    return assignment, assignment.worker
