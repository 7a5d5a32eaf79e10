"""Submissions: a worker hands a task in (or back); a completed item is aggregated and moves things on."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.prepared import PreparedQuery
from djangokit.transitions import move

from .. import guardrails
from ..eligibility import judgments_needed, qualifying_result
from ..languages import speaking_to
from ..errors import (AssignmentNotActive, AssignmentNotFound, BrokenItem, ConflictingResubmission, InvalidTransition,
                      NotYourAssignment, RoundNotOpen, invalid_submission, message_of)
from ..models import (ASSIGNMENT_REVIEW, ASSIGNMENT_STATUS, Assignment, CollectionRound, Qualification, Worker,
                      WorkItem)
from ..task_types import get_task_type
from ..task_types.base import TaskType
from .engine import ROWS_IN_HAND, item_fits
from .rounds import ACTIVE_STATUSES, complete_round_if_last_item
from .workers import grant_qualification

logger = logging.getLogger(__name__)


@dataclass
class SubmitOutcome:
    assignment: Assignment
    created: bool  # False when the same submission was already stored


def _locked_assignment_of(*, assignment_id: Any, worker: Worker, with_item: bool = True) -> Assignment:
    try:
        assignment_id = int(assignment_id)
    except (TypeError, ValueError):
        raise AssignmentNotFound(_("Unknown assignment.")) from None
    assignment = _locked_assignment.first(with_item, assignment_id=assignment_id)
    if assignment is None:
        raise AssignmentNotFound(_("Unknown assignment."))
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment(_("Unknown assignment."))
    assignment.worker = worker
    return assignment


def _build_locked_assignment(with_item: bool, assignment_id: int):
    # Lock only the assignment row: locking the joined round or item would serialise everything.
    # The worker is the one in hand.
    return (Assignment.objects.select_for_update(no_key=True, of=("self",))
            .select_related("round", *(["item"] if with_item else [])).filter(pk=assignment_id).order_by()[:1])


def _build_locked_item(targets: tuple, item_id: int):
    return (WorkItem.objects.select_for_update(no_key=True, of=("self",)).select_related(*targets)
            .filter(pk=item_id).order_by()[:1])


# Every submission reads both: compiled once (``djangokit.prepared``).
_locked_assignment = PreparedQuery(_build_locked_assignment)


_locked_item_with_targets = PreparedQuery(_build_locked_item)


def _locked_item(*, item_id: int, round: CollectionRound, handler) -> WorkItem:
    """The item row locked (FOR NO KEY UPDATE, the item only) with its task type's targets, so
    checking it costs no query. The lock a submission takes to complete the item; taken before the
    assignment changes, after the assignment's own lock (the order every writer keeps)."""
    item = _locked_item_with_targets.first(tuple(handler.target_fields), item_id=item_id)
    if item is None:
        raise WorkItem.DoesNotExist
    item.round = round
    return item


@transaction.atomic
def return_assignment(*, assignment_id: int, worker: Worker) -> Assignment:
    """The worker gives the task back; its slot goes to someone else."""
    assignment = _locked_assignment_of(assignment_id=assignment_id, worker=worker)
    if assignment.status != Assignment.Status.ASSIGNED:
        raise AssignmentNotActive(_("This task is no longer open."))
    return move(assignment, ASSIGNMENT_STATUS, "give_back")


def submit_assignment(
    *, assignment_id: Any, worker: Worker, data: Any, files: Any = None, now: datetime | None = None
) -> SubmitOutcome:
    """Validate and store a submission once; a repeat of the same submission returns the stored one.

    Raises a CrowdWorkError (4xx) and changes nothing when the submission is refused.
    """
    now = now or timezone.now()
    with transaction.atomic():
        # The item is locked on its own below, with the targets of the round's task type only: joining
        # every target column here (the type is not known before this read) costs the planner more
        # than the extra statement.
        assignment = _locked_assignment_of(assignment_id=assignment_id, worker=worker, with_item=False)
        # From here on the assignment is the worker's own: refusals speak the worker's language on its round.
        with speaking_to(worker=worker, round=assignment.round):
            return _submit_locked(assignment=assignment, worker=worker, data=data, files=files, now=now)


def _submit_locked(*, assignment: Assignment, worker: Worker, data: Any, files: Any, now: datetime) -> SubmitOutcome:
    handler = get_task_type(assignment.round.task_type)
    assignment.item = _locked_item(item_id=assignment.item_id, round=assignment.round, handler=handler)
    if assignment.status == Assignment.Status.ASSIGNED and not item_fits(item=assignment.item, handler=handler):
        # Its page gives it back on the next load; an answer to it cannot be checked.
        raise BrokenItem(_("This task cannot be shown and was given back; please take the next one."))
    try:
        validated = handler.validate(assignment=assignment, data=data, files=files)
    except ValidationError as error:
        raise invalid_submission(error) from None
    uploads = {key: value for key, value in validated.items() if key.startswith("_")}
    payload = {key: value for key, value in validated.items() if not key.startswith("_")}
    input_stats = None
    if handler.records_typing:
        try:
            input_stats = guardrails.clean_input_stats(data.get("typing"))
        except ValidationError as error:
            raise invalid_submission(error) from None

    if assignment.status == Assignment.Status.SUBMITTED:
        if assignment.payload == payload:
            return SubmitOutcome(assignment=assignment, created=False)
        raise ConflictingResubmission(
            _("This task was already submitted with different answers; they cannot be changed.")
        )
    if assignment.round.status not in ACTIVE_STATUSES:
        raise RoundNotOpen(_("This round is closed; the submission was not stored."))
    # An expired assignment still takes work that reached its provider in time: a sync stores it
    # with the provider's submission time as ``now``.
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.EXPIRED) or assignment.expires_at <= now:
        raise AssignmentNotActive(_("The time for this task ran out; the submission was not stored."))

    assignment.payload = payload
    # As stored below: the task type's hooks see the submitted assignment.
    assignment.status = ASSIGNMENT_STATUS.target(assignment.status, "submit")
    assignment.review_status = ASSIGNMENT_REVIEW.target(assignment.review_status, "submit")
    assignment.submitted_at = now
    assignment.duration_seconds = max((now - assignment.accepted_at).total_seconds(), 0.0)
    assignment.result = handler.result(assignment)
    assignment.input_stats = input_stats
    # The row is locked since it was read: only the fields a submission sets are written (a task
    # type's ``apply`` sets ``result`` at most).
    changed = ["payload", "submitted_at", "duration_seconds", "result", "input_stats"]
    if _changes_data(handler):
        try:
            with transaction.atomic():
                handler.apply(assignment, uploads=uploads)
        except ValidationError as error:
            raise invalid_submission(error) from None
    if handler.written_texts(assignment):
        others = (Assignment.objects.submitted().filter(item=assignment.item_id)
                  .exclude(worker=assignment.worker_id).order_by("pk"))
        assignment.flags = guardrails.flags_for(assignment=assignment, handler=handler, others=others)
        changed.append("flags")
    item = assignment.item
    if item.is_gold:
        assignment.gold_passed = all(
            (assignment.result or {}).get(key) == expected for key, expected in item.gold_answer.items()
        )
        changed.append("gold_passed")
    assignment.full_clean(exclude=ROWS_IN_HAND, validate_constraints=False)
    # One conditional update: the status and review status move together (a check constraint holds them).
    move(assignment, ASSIGNMENT_STATUS, "submit", also={ASSIGNMENT_REVIEW: "submit"},
         **{field: getattr(assignment, field) for field in changed})
    complete_item_if_done(item_id=item.pk, now=now, locked=item)
    qualify_if_passed(round=assignment.round, worker=worker)
    return SubmitOutcome(assignment=assignment, created=True)


def _changes_data(handler) -> bool:
    """Whether the task type has effects of its own on submission (its ``apply``); its savepoint is
    skipped when not."""
    return type(handler).apply is not TaskType.apply


def qualify_if_passed(*, round: CollectionRound, worker: Worker) -> None:
    result = qualifying_result(round=round, worker=worker)
    if result and result["qualified"] and round.project_id is not None:
        grant_qualification(worker=worker, project=round.project, source=Qualification.Source.QUALIFYING_ROUND)


_judgments_counted = PreparedQuery(
    lambda _shape, item_id: Assignment.objects.counted().filter(item_id=item_id).order_by()
    .values("item").annotate(n=Count("pk")).values_list("n", flat=True))


def complete_item_if_done(*, item_id: int, now: datetime, locked: WorkItem | None = None) -> None:
    """``locked``: the item, already locked in this transaction (with its round)."""
    item = locked or (
        WorkItem.objects.select_for_update(no_key=True, of=("self",))
        .select_related("round")
        .order_by()
        .get(pk=item_id)
    )
    if item.completed_at is not None:
        return
    # Only confirmed judgments complete an item: forged or not-yet-confirmed provider work never does.
    # A statement of its own, after the lock: under READ COMMITTED it then sees every judgment
    # committed before the lock was granted (a subquery of the locking statement would not).
    judgments = sum(_judgments_counted.all(item_id=item.pk))
    if judgments >= judgments_needed(item=item):
        item.completed_at = now
        item.save(update_fields=["completed_at"])
        on_item_completed(item=item)
        complete_round_if_last_item(round_id=item.round_id)


def on_item_completed(*, item: WorkItem) -> None:
    """The single place where an item that has all its judgments moves things on.

    Runs the task type's aggregation (verification verdicts, caption choice, pairwise majority),
    stores what it returns, then the type's completion hook (its follow-up stage). Runs inside the
    submitting transaction.
    """
    handler = get_task_type(item.round.task_type)
    store_aggregate(item=item, handler=handler)
    if not item.is_gold:  # a gold item scores workers; it decides nothing about the benchmark data
        handler.on_completed(item)
    logger.info("item %s of round %s completed", item.pk, item.round_id)


def gold_summary(item: WorkItem) -> dict:
    """The aggregate of a gold / attention item: how many counted answers passed its check. The task
    type's aggregation (verdicts, majority winners) never runs on gold, so gold enters no evaluation data."""
    passed = list(item.assignments.counted().values_list("gold_passed", flat=True))
    return {"gold": True, "judgments": len(passed), "passed": sum(1 for value in passed if value)}


def store_aggregate(*, item: WorkItem, handler) -> None:
    try:
        item.aggregate_result = gold_summary(item) if item.is_gold else handler.aggregate(item)
    except ValidationError as error:
        raise InvalidTransition(message_of(error)) from None
    item.save(update_fields=["aggregate_result"])
