"""Submissions: a worker hands a task in (or back); a completed item is aggregated and moves things on."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.prepared import PreparedQuery
from djangokit.transitions import move, move_reading, save_fields

from .. import guardrails
from ..judgments import announce as announce_judgment
from ..eligibility import (WorkerFacts, facts_from_row, judgments_needed, qualifying_result, read_round_for_worker,
                           worker_facts_columns)
from ..languages import speaking_to
from ..errors import (AssignmentNotActive, AssignmentNotFound, BrokenItem, ConflictingResubmission, CrowdWorkError,
                      InvalidTransition, NotYourAssignment, RoundNotOpen, invalid_submission, message_of)
from ..models import (ASSIGNMENT_REVIEW, ASSIGNMENT_STATUS, Assignment, CollectionRound, Qualification, Worker,
                      WorkItem)
from ..task_types import get_task_type
from ..task_types.base import TaskType
from .engine import ROWS_IN_HAND, item_fits, request_assignment
from .rounds import ACTIVE_STATUSES, complete_round_if_last_item
from .workers import grant_qualification

logger = logging.getLogger(__name__)


@dataclass
class SubmitOutcome:
    assignment: Assignment
    created: bool  # False when the same submission was already stored
    item_completed: bool = False  # this submission completed its item


@dataclass
class SubmitAndNextOutcome:
    submitted: SubmitOutcome
    round: CollectionRound  # with ``worker_facts`` as they are after the submission
    next: Assignment | None  # the worker's next task in the round; None when nothing is left for them
    refusal: str = ""  # why no next task was given, when it was refused (``CrowdWorkError``)


def _locked_assignment_of(*, assignment_id: Any, worker: Worker, with_item: bool = True,
                          with_facts: bool = False) -> Assignment:
    """The worker's assignment, locked, with its round (and item); ``with_facts``: with the worker's
    facts in the round as well (``eligibility.worker_facts_columns``), read in the same statement."""
    try:
        assignment_id = int(assignment_id)
    except (TypeError, ValueError):
        raise AssignmentNotFound(_("Unknown assignment.")) from None
    if with_facts:
        assignment = _locked_assignment_with_facts.first(with_item, assignment_id=assignment_id, worker_id=worker.pk)
    else:
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


def _build_locked_assignment_with_facts(with_item: bool, assignment_id: int, worker_id: int):
    return _build_locked_assignment(with_item, assignment_id).annotate(
        **worker_facts_columns(round_ref="round_id", project_ref="round__project_id", worker_id=worker_id))


def _build_locked_item(targets: tuple, item_id: int):
    return (WorkItem.objects.select_for_update(no_key=True, of=("self",)).select_related(*targets)
            .filter(pk=item_id).order_by()[:1])


# Every submission reads both: compiled once (``djangokit.prepared``).
_locked_assignment = PreparedQuery(_build_locked_assignment)
# Submit-and-next: the next task needs the worker's facts in the round, read with the lock.
_locked_assignment_with_facts = PreparedQuery(_build_locked_assignment_with_facts)


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


def start_assignment(*, assignment_id: int, worker: Worker, now: datetime | None = None) -> Assignment:
    """The worker starts the task a page showed them (``in_preview``): it is theirs for the round's
    time limit from now. Starting a started task changes nothing; a task whose preview ran out, or
    that is not open, is refused (``AssignmentNotActive``) and the page offers the next one."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _locked_assignment_of(assignment_id=assignment_id, worker=worker, with_item=False)
        if assignment.status != Assignment.Status.ASSIGNED or assignment.expires_at <= now:
            raise AssignmentNotActive(_("The time for this task ran out."))
        if assignment.in_preview:
            assignment.in_preview = False
            assignment.expires_at = now + timedelta(seconds=assignment.round.time_limit_seconds)
            Assignment.objects.filter(pk=assignment.pk).update(in_preview=False, expires_at=assignment.expires_at)
        return assignment


def submit_assignment(
    *, assignment_id: Any, worker: Worker, data: Any, files: Any = None, now: datetime | None = None,
    with_facts: bool = False,
) -> SubmitOutcome:
    """Validate and store a submission once; a repeat of the same submission returns the stored one.

    Raises a CrowdWorkError (4xx) and changes nothing when the submission is refused. ``with_facts``:
    the worker's facts in the round are read with the locked assignment (``submit_and_next``).
    """
    now = now or timezone.now()
    with transaction.atomic():
        # The item is locked on its own below, with the targets of the round's task type only: joining
        # every target column here (the type is not known before this read) costs the planner more
        # than the extra statement.
        assignment = _locked_assignment_of(assignment_id=assignment_id, worker=worker, with_item=False,
                                           with_facts=with_facts)
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
    # With the item's counted judgments, read in the same statement (after the item's lock, so every
    # judgment committed before it was granted is seen); this one counts once submitted if confirmed.
    _moved, others = move_reading(assignment, ASSIGNMENT_STATUS, "submit", also={ASSIGNMENT_REVIEW: "submit"},
                                  read=_judgments_counted_sql(item.pk),
                                  **{field: getattr(assignment, field) for field in changed})
    judgments = (others or 0) + int(assignment.confirmation == Assignment.Confirmation.CONFIRMED)
    completed = complete_item_if_done(item_id=item.pk, now=now, locked=item, judgments=judgments)
    qualify_if_passed(round=assignment.round, worker=worker)
    announce_judgment(round=assignment.round, handler=handler)
    return SubmitOutcome(assignment=assignment, created=True, item_completed=completed)


def submit_and_next(*, assignment_id: Any, worker: Worker, data: Any, files: Any = None, now: datetime | None = None,
                    preview: bool = False) -> SubmitAndNextOutcome:
    """Store the submission (``submit_assignment``), then give the worker their next task in the
    round (``request_assignment``, ``preview`` as there): one request per task instead of two.

    The worker's facts in the round come with the locked assignment and are brought up to date with
    what the submission did, so the next task costs no read of the round (a submission in a
    qualifying round reads them again: it may have qualified the worker). A round the submission
    completed is complete in hand (``complete_item_if_done``); one completed just after it
    (``complete_round_if_last_item`` found the round held) still reads as open, and the claim then
    finds nothing to give. The submission commits before the next task is claimed: a refusal of the
    next task never undoes it.
    """
    outcome = submit_assignment(assignment_id=assignment_id, worker=worker, data=data, files=files, now=now,
                                with_facts=True)
    assignment = outcome.assignment
    round = assignment.round
    if (round.qualification_rules or {}).get("qualifies_for_project") is not None:
        round = read_round_for_worker(round_id=round.pk, worker=worker)
    else:
        read = facts_from_row(assignment, worker_id=worker.pk)
        failed = outcome.created and assignment.gold_passed is False and (
            assignment.confirmation == Assignment.Confirmation.CONFIRMED)
        round.worker_facts = WorkerFacts(
            worker_id=worker.pk, failed_checks=read.failed_checks + int(failed),
            done=read.done + int(outcome.created), items=read.items, qualified=read.qualified,
            consent_sha256=read.consent_sha256,
            # The one open task of the worker in the round was the one just submitted.
            has_open_assignment=read.has_open_assignment and not outcome.created)
    with speaking_to(worker=worker, round=round):
        try:
            following = request_assignment(round=round, worker=worker, now=now, preview=preview)
        except CrowdWorkError as error:
            # The submission is stored all the same; the worker is told why no task follows.
            return SubmitAndNextOutcome(submitted=outcome, round=round, next=None, refusal=error.message)
    return SubmitAndNextOutcome(submitted=outcome, round=round, next=following)


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


def _judgments_counted_sql(item_id: int) -> tuple[str, tuple]:
    """The SQL of the item's counted judgments, one value (``move_reading``)."""
    sql, params = _counted_of_item.sql(item_id=item_id)
    return f"SELECT COUNT(*) FROM ({sql}) counted", params


_counted_of_item = PreparedQuery(
    lambda _shape, item_id: Assignment.objects.counted().filter(item_id=item_id).order_by().values("pk"))


def complete_item_if_done(*, item_id: int, now: datetime, locked: WorkItem | None = None,
                          judgments: int | None = None) -> bool:
    """``locked``: the item, already locked in this transaction (with its round); ``judgments``: its
    counted judgments, read after the lock (counted here otherwise). Whether the item was completed
    now; the item's round object then has the round's status (complete if it was its last open item)."""
    item = locked or (
        WorkItem.objects.select_for_update(no_key=True, of=("self",))
        .select_related("round")
        .order_by()
        .get(pk=item_id)
    )
    if item.completed_at is not None:
        return False
    # Only confirmed judgments complete an item: forged or not-yet-confirmed provider work never does.
    # A statement of its own, after the lock: under READ COMMITTED it then sees every judgment
    # committed before the lock was granted (a subquery of the locking statement would not).
    if judgments is None:
        judgments = sum(_judgments_counted.all(item_id=item.pk))
    if judgments >= judgments_needed(item=item):
        item.completed_at = now
        on_item_completed(item=item)
        complete_round_if_last_item(round=item.round)
        return True
    return False


def on_item_completed(*, item: WorkItem) -> None:
    """The single place where an item that has all its judgments moves things on.

    Runs the task type's aggregation (verification verdicts, caption choice, pairwise majority),
    stores what it returns with the item's ``completed_at`` (one UPDATE), then the type's completion
    hook (its follow-up stage). Runs inside the submitting transaction.
    """
    handler = get_task_type(item.round.task_type)
    store_aggregate(item=item, handler=handler, also=["completed_at"])
    if not item.is_gold:  # a gold item scores workers; it decides nothing about the benchmark data
        handler.on_completed(item)
    logger.info("item %s of round %s completed", item.pk, item.round_id)


def gold_summary(item: WorkItem) -> dict:
    """The aggregate of a gold / attention item: how many counted answers passed its check. The task
    type's aggregation (verdicts, majority winners) never runs on gold, so gold enters no evaluation data."""
    passed = list(item.assignments.counted().values_list("gold_passed", flat=True))
    return {"gold": True, "judgments": len(passed), "passed": sum(1 for value in passed if value)}


def store_aggregate(*, item: WorkItem, handler, also: list[str] = ()) -> None:
    """Aggregate the item's counted judgments and store the result, with the item's fields ``also``."""
    try:
        item.aggregate_result = gold_summary(item) if item.is_gold else handler.aggregate(item)
    except ValidationError as error:
        raise InvalidTransition(message_of(error)) from None
    save_fields(item, ["aggregate_result", *also])
