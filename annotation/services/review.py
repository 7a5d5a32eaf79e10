"""The engine's record of a review decision (``Assignment.review_status``), and what a rejection undoes."""
from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.transitions import move

from ..judgments import announce as announce_judgment
from ..eligibility import judgments_needed
from ..errors import InvalidTransition, message_of
from ..models import ASSIGNMENT_REVIEW, Assignment, CollectionRound, WorkItem
from ..task_types import get_task_type
from .rounds import ACTIVE_STATUSES, transition_round
from .submissions import store_aggregate

logger = logging.getLogger(__name__)

# The event of ``ASSIGNMENT_REVIEW`` that records each decision: a submission is approved or rejected once.
_EVENT_FOR = {Assignment.ReviewStatus.APPROVED: "approve", Assignment.ReviewStatus.REJECTED: "reject"}


def _record_review(*, assignment: Assignment, status: str, feedback: str) -> Assignment:
    event = _EVENT_FOR[status]
    with transaction.atomic():
        locked = (
            Assignment.objects.select_for_update(no_key=True, of=("self",))
            .select_related("round")
            .order_by()
            .get(pk=assignment.pk)
        )
        if locked.status != Assignment.Status.SUBMITTED:
            raise InvalidTransition(_("Only submitted assignments can be approved or rejected."))
        if locked.review_status == status:
            return locked
        if event not in ASSIGNMENT_REVIEW.allowed_events(locked.review_status):
            raise InvalidTransition(
                _("A submission that is %(now)s cannot be %(next)s.")
                % {"now": locked.get_review_status_display().lower(), "next": status}
            )
        locked.reviewed_at = timezone.now()
        locked.review_feedback = feedback
        locked.full_clean(validate_constraints=False)
        move(locked, ASSIGNMENT_REVIEW, event, reviewed_at=locked.reviewed_at, review_feedback=feedback)
        if status == Assignment.ReviewStatus.REJECTED:
            _after_rejection(item_id=locked.item_id)
            # A rejected judgment no longer counts in the results read from the round.
            announce_judgment(round=locked.round, handler=get_task_type(locked.round.task_type))
    return locked


def _after_rejection(*, item_id: int) -> None:
    """A rejected judgment no longer counts: a completed item's aggregate is recomputed without it,
    and while the round is open the item is open again so another worker fills the slot."""
    item = (
        WorkItem.objects.select_for_update(no_key=True, of=("self",))
        .select_related("round")
        .order_by()
        .get(pk=item_id)
    )
    if item.completed_at is None:
        return
    handler = get_task_type(item.round.task_type)
    store_aggregate(item=item, handler=handler)
    if Assignment.objects.counted().filter(item=item).count() >= judgments_needed(item=item, handler=handler):
        return  # adaptive overlap: the majority still stands without the rejected vote
    if item.round.status in ACTIVE_STATUSES:
        item.completed_at = None
        item.save(update_fields=["completed_at"])
        if item.round.status == CollectionRound.Status.COMPLETE:
            item.round = transition_round(round=item.round, action="reopen")  # the item needs another worker
        if item.is_gold:
            return
        try:
            handler.on_reopened(item)
        except ValidationError as error:
            raise InvalidTransition(message_of(error)) from None
        logger.info("item %s of round %s reopened after a rejection", item.pk, item.round_id)


def approve_assignment(*, assignment: Assignment, feedback: str = "") -> Assignment:
    """Record that the submission was approved (the provider acts first; see providers.services)."""
    return _record_review(assignment=assignment, status=Assignment.ReviewStatus.APPROVED, feedback=feedback)


def reject_assignment(*, assignment: Assignment, feedback: str = "") -> Assignment:
    """Record that the submission was rejected. Its judgment stops counting: before the item completes
    the slot is free for another worker; after, the item's aggregate is recomputed without it and,
    while the round is open, the item is open again for one more worker."""
    return _record_review(assignment=assignment, status=Assignment.ReviewStatus.REJECTED, feedback=feedback)
