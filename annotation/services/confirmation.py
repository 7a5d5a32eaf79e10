"""What a worker's provider says about an assignment (``Assignment.confirmation``): the one writer."""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from djangokit.transitions import move

from ..errors import InvalidTransition
from ..models import ASSIGNMENT_CONFIRMATION, Assignment, Worker, WorkItem
from ..task_types import get_task_type
from .submissions import complete_item_if_done, qualify_if_passed, store_aggregate

# The event of ``ASSIGNMENT_CONFIRMATION`` that records each thing a provider may say.
_EVENT_FOR = {Assignment.Confirmation.CONFIRMED: "confirm", Assignment.Confirmation.FORGED: "forge"}


def record_confirmation(*, assignment: Assignment, confirmation: str, now: datetime | None = None) -> Assignment:
    """Record what the worker's provider says about the assignment: the one way its confirmation
    changes. Confirming submitted work may complete its item (or, on a completed item, refresh the
    aggregate). Repeating the current state is a no-op; other changes are refused (409)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = (
            Assignment.objects.select_for_update(no_key=True, of=("self",))
            .order_by()
            .get(pk=assignment.pk)
        )
        if locked.confirmation == confirmation:
            return locked
        event = _EVENT_FOR.get(confirmation)
        if event is None or event not in ASSIGNMENT_CONFIRMATION.allowed_events(locked.confirmation):
            raise InvalidTransition(
                f"an assignment that is {locked.confirmation} cannot become {confirmation}"
            )
        move(locked, ASSIGNMENT_CONFIRMATION, event,
             confirmed_at=now if confirmation == Assignment.Confirmation.CONFIRMED else None)
        if confirmation == Assignment.Confirmation.CONFIRMED and locked.status == Assignment.Status.SUBMITTED:
            item = WorkItem.objects.select_related("round").get(pk=locked.item_id)
            if item.completed_at is None:
                complete_item_if_done(item_id=item.pk, now=now)
            else:
                store_aggregate(item=item, handler=get_task_type(item.round.task_type))
            # A qualifying round's answers count once confirmed: the qualification may be earned now.
            qualify_if_passed(round=item.round, worker=Worker.objects.get(pk=locked.worker_id))
    return locked
