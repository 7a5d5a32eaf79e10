"""What a worker's provider says about an assignment (``Assignment.confirmation``): the one writer."""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ..errors import InvalidTransition
from ..models import Assignment, Worker, WorkItem
from ..task_types import get_task_type
from .submissions import complete_item_if_done, qualify_if_passed, store_aggregate

# Allowed changes of ``Assignment.confirmation``. Confirmed is final; a submission first judged
# unknown to the provider still counts if the provider later shows it (e.g. a listing that lagged).
CONFIRMATION_TRANSITIONS = {
    Assignment.Confirmation.UNCONFIRMED: {Assignment.Confirmation.CONFIRMED, Assignment.Confirmation.FORGED},
    Assignment.Confirmation.FORGED: {Assignment.Confirmation.CONFIRMED},
    Assignment.Confirmation.CONFIRMED: set(),
}


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
        if confirmation not in CONFIRMATION_TRANSITIONS.get(locked.confirmation, set()):
            raise InvalidTransition(
                f"an assignment that is {locked.confirmation} cannot become {confirmation}"
            )
        locked.confirmation = confirmation
        locked.confirmed_at = now if confirmation == Assignment.Confirmation.CONFIRMED else None
        locked.save(update_fields=["confirmation", "confirmed_at"])
        if confirmation == Assignment.Confirmation.CONFIRMED and locked.status == Assignment.Status.SUBMITTED:
            item = WorkItem.objects.select_related("round").get(pk=locked.item_id)
            if item.completed_at is None:
                complete_item_if_done(item_id=item.pk, now=now)
            else:
                store_aggregate(item=item, handler=get_task_type(item.round.task_type))
            # A qualifying round's answers count once confirmed: the qualification may be earned now.
            qualify_if_passed(round=item.round, worker=Worker.objects.get(pk=locked.worker_id))
    return locked
