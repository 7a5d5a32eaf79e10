"""Writes of crowd work: rounds and their lifecycle, the assignment engine, submissions and reviews.

Views, the API, admin actions and commands call these; none of them writes crowd-work rows itself.
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Callable, Iterable

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from crowdbench.errors import ServiceError
from crowdbench.prepared import PreparedQuery

from . import consent, guardrails
from .auth import IN_WORKER_GROUP
from .languages import speaking_to
from .models import Assignment, CollectionRound, ConsentDecision, Qualification, Worker, WorkItem, round_default
from .task_types import get_task_type
from .task_types.base import TaskType

logger = logging.getLogger(__name__)

# Candidates the engine looks at per request; more than enough, since each attempt locks one row.
CANDIDATE_BATCH = 200


class CrowdWorkError(ServiceError):
    """A refused request, with the HTTP status and the worker-readable message to answer with."""

    status_code = 400


class InvalidSubmission(CrowdWorkError):
    """The answers were refused; ``errors`` maps each field to its messages."""

    status_code = 400

    def __init__(self, message: str = "", *, errors: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.errors = errors or {}


class BrokenItem(CrowdWorkError):
    """The task's stored item does not fit its round's task type; it was given back."""

    status_code = 409


class NotQualified(CrowdWorkError):
    status_code = 403


class AssignmentNotFound(CrowdWorkError):
    status_code = 404


class NotYourAssignment(AssignmentNotFound):
    """Answered exactly like an unknown id, so probing ids tells a worker nothing about others' work."""


class RoundNotOpen(CrowdWorkError):
    status_code = 409


class AssignmentNotActive(CrowdWorkError):
    status_code = 409


class ConflictingResubmission(CrowdWorkError):
    status_code = 409


class InvalidTransition(CrowdWorkError):
    status_code = 409


class ConsentRequired(CrowdWorkError):
    """The round's study information must be read and accepted before its first task."""

    status_code = 403


def _message(error: ValidationError) -> str:
    return " ".join(error.messages)


def _invalid_submission(error: ValidationError) -> InvalidSubmission:
    errors = error.message_dict if hasattr(error, "error_dict") else {}
    return InvalidSubmission(_message(error), errors={field: list(messages) for field, messages in errors.items()})


# --- workers ---------------------------------------------------------------------------------------


def local_worker_for(*, user) -> Worker | None:
    """The worker record of a user who may work on the local pages (active, in the workers group), or
    None. One query when the record exists (the common case: every API request of a worker)."""
    from .permissions import is_local_worker

    if not (user.is_authenticated and user.is_active):
        return None
    if hasattr(user, IN_WORKER_GROUP) and "crowd_worker" in user._state.fields_cache:
        # Loaded with the user by the session's backend (``annotation.auth``): no query.
        if not getattr(user, IN_WORKER_GROUP):
            return None
        worker = user._state.fields_cache["crowd_worker"]
        if worker is not None and worker.provider == Worker.LOCAL and worker.external_id == str(user.pk):
            return worker
        return get_or_create_local_worker(user=user)
    worker = Worker.objects.filter(
        provider=Worker.LOCAL, external_id=str(user.pk), user=user,
        user__groups__name=settings.ANNOTATION_WORKER_GROUP,
    ).first()
    if worker is not None:
        return worker
    return get_or_create_local_worker(user=user) if is_local_worker(user) else None


def get_or_create_local_worker(*, user) -> Worker:
    # A plain read first: every request of a known worker comes here, and get_or_create's savepoint
    # would cost two more round trips each time.
    worker = Worker.objects.filter(provider=Worker.LOCAL, external_id=str(user.pk)).first()
    if worker is not None:
        return worker
    with transaction.atomic():
        worker, _created = Worker.objects.get_or_create(
            provider=Worker.LOCAL, external_id=str(user.pk), defaults={"user": user}
        )
    return worker


@transaction.atomic
def set_worker_languages(*, worker: Worker, languages: Iterable[str]) -> Worker:
    """The languages a worker works in (codes of ``Language``), as the worker states them."""
    locked = Worker.objects.select_for_update().get(pk=worker.pk)
    locked.languages = sorted(set(languages))
    try:
        locked.full_clean(validate_constraints=False)
    except ValidationError as error:
        raise InvalidSubmission(_message(error)) from None
    locked.save(update_fields=["languages"])
    return locked


def grant_qualification(*, worker: Worker, project, source: str, granted_by=None) -> tuple[Qualification, bool]:
    """Allow the worker onto the project's ``qualified_only`` rounds; (the qualification, whether new)."""
    if project is None:
        raise InvalidTransition(_("Only rounds of a project have qualified workers."))
    return Qualification.objects.get_or_create(
        worker=worker, project=project, defaults={"source": source, "granted_by": granted_by}
    )


# --- rounds ----------------------------------------------------------------------------------------


@transaction.atomic
def create_round(
    *,
    name: str,
    task_type: str,
    created_by=None,
    language: str = round_default("language"),
    workers_per_item: int = round_default("workers_per_item"),
    min_workers_per_item: int | None = None,
    reward_per_task: Decimal = round_default("reward_per_task"),
    currency: str = round_default("currency"),
    target_hourly_wage: Decimal = round_default("target_hourly_wage"),
    time_limit_seconds: int = round_default("time_limit_seconds"),
    qualification_rules: dict | None = None,
    budget_cap: Decimal | None = None,
    instructions: str = "",
    project=None,
    estimated_seconds_per_task: int | None = None,
    consent_text: str = "",
) -> CollectionRound:
    round = CollectionRound(
        name=name,
        project=project,
        task_type=task_type,
        created_by=created_by,
        language=language,
        workers_per_item=workers_per_item,
        min_workers_per_item=min_workers_per_item,
        reward_per_task=reward_per_task,
        currency=currency,
        target_hourly_wage=target_hourly_wage,
        time_limit_seconds=time_limit_seconds,
        qualification_rules=qualification_rules or {},
        budget_cap=budget_cap,
        instructions=instructions,
        estimated_seconds_per_task=estimated_seconds_per_task,
        consent_text=consent.clean_consent_text(consent_text),
    )
    round.full_clean()
    round.save()
    return round


@transaction.atomic
def add_items(
    *, round: CollectionRound, targets: Iterable[Any], gold_answers: dict[int, dict] | None = None
) -> list[WorkItem]:
    """Add one work item per target, in order; ``gold_answers`` maps a target's index to its expected result."""
    round = CollectionRound.objects.select_for_update().get(pk=round.pk)
    if round.status not in (CollectionRound.Status.DRAFT, *ACTIVE_STATUSES):
        raise InvalidTransition(f"items can only be added to draft, open, paused or complete rounds, not {round.status} ones")
    handler = get_task_type(round.task_type)
    gold_answers = gold_answers or {}
    last = round.items.order_by("-position").values_list("position", flat=True).first()
    next_position = 0 if last is None else last + 1
    items = []
    for index, target in enumerate(targets):
        item = handler.make_item(round=round, target=target, position=next_position + index)
        if index in gold_answers:
            item.is_gold = True
            item.gold_answer = gold_answers[index]
        item.full_clean()
        item.save()
        items.append(item)
    if items and round.status == CollectionRound.Status.COMPLETE:
        _transition(round=round, action="reopen")  # the new items need work
    return items


# Round statuses: action → (statuses it may start from, status it leads to; None keeps the status).
# A paused round hands out no new tasks; work in flight may still be submitted. "complete" and
# "reopen" are the engine's own (``AUTOMATIC_ACTIONS``): an open round is complete once every item
# has its judgments, and open again when a rejection reopens an item or items are added.
_TRANSITIONS = {
    "open": ({CollectionRound.Status.DRAFT}, CollectionRound.Status.OPEN),
    "pause": ({CollectionRound.Status.OPEN}, CollectionRound.Status.PAUSED),
    "resume": ({CollectionRound.Status.PAUSED}, CollectionRound.Status.OPEN),
    # A draft has no work under way to extend: its settings are still its own to set.
    "extend": ({CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED}, None),
    # More workers may take the round's tasks: restricting qualification rules are dropped.
    "widen": ({CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED}, None),
    "close": ({CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED, CollectionRound.Status.COMPLETE},
              CollectionRound.Status.CLOSED),
    "cancel": ({CollectionRound.Status.DRAFT, CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED,
                CollectionRound.Status.COMPLETE}, CollectionRound.Status.CANCELLED),
    "complete": ({CollectionRound.Status.OPEN}, CollectionRound.Status.COMPLETE),
    "reopen": ({CollectionRound.Status.COMPLETE}, CollectionRound.Status.OPEN),
}
AUTOMATIC_ACTIONS = ("complete", "reopen")
# Statuses in which work may still be submitted and items still change (added, reopened, fed). A
# complete round takes work still in flight, and reopens when an item needs more.
ACTIVE_STATUSES = (CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED, CollectionRound.Status.COMPLETE)


def allowed_actions(round: CollectionRound) -> list[str]:
    """The round transitions a researcher may make from the round's status, in ``_TRANSITIONS`` order
    (the engine's own, ``AUTOMATIC_ACTIONS``, are not among them)."""
    return [action for action, (allowed_from, _target) in _TRANSITIONS.items()
            if round.status in allowed_from and action not in AUTOMATIC_ACTIONS]


def _has_open_items(round: CollectionRound) -> bool:
    return WorkItem.objects.filter(round=round, completed_at__isnull=True).exists()


def check_transition(*, round: CollectionRound, action: str) -> None:
    """Refuse (``InvalidTransition``) a transition the round cannot make now; reads only, so a caller
    can check before its own writes and outside calls."""
    allowed_from, _target = _TRANSITIONS[action]
    if round.status not in allowed_from:
        raise InvalidTransition(f"cannot {action} a round that is {round.status}")
    if action == "open" and not round.items.exists():
        raise InvalidTransition("a round needs at least one item before it opens")


def _transition(*, round: CollectionRound, action: str, change: Callable[[CollectionRound], None] | None = None
                ) -> CollectionRound:
    _allowed_from, target = _TRANSITIONS[action]
    with transaction.atomic():
        locked = CollectionRound.objects.select_for_update().get(pk=round.pk)
        check_transition(round=locked, action=action)
        if target is not None:
            locked.status = target
        if action == "open":
            locked.opened_at = timezone.now()
        elif action in ("close", "cancel"):
            locked.closed_at = timezone.now()
        elif action == "resume" and locked.items.exists() and not _has_open_items(locked):
            # Its last items completed while it was paused: resumed, it is complete.
            locked.status = CollectionRound.Status.COMPLETE
        if change is not None:
            change(locked)
        locked.full_clean()
        locked.save()
    return locked


def open_round(*, round: CollectionRound) -> CollectionRound:
    return _transition(round=round, action="open")


def pause_round(*, round: CollectionRound) -> CollectionRound:
    """No new tasks are handed out until ``resume_round``; assignments in flight may still be submitted."""
    return _transition(round=round, action="pause")


def resume_round(*, round: CollectionRound) -> CollectionRound:
    return _transition(round=round, action="resume")


def extend_round(
    *, round: CollectionRound, time_limit_seconds: int | None = None, budget_cap: Decimal | None = None
) -> CollectionRound:
    """More time per assignment and/or a higher budget cap (never less: lowering is refused).

    A longer time limit also moves the deadline of the assignments in flight by the difference.
    The providers' side (e.g. MTurk HIT lifetimes) is ``providers.services.extend_round``.
    """
    if time_limit_seconds is None and budget_cap is None:
        raise InvalidTransition("extend needs a longer time limit or a higher budget cap")

    def change(locked: CollectionRound) -> None:
        if time_limit_seconds is not None:
            if time_limit_seconds <= locked.time_limit_seconds:
                raise InvalidTransition(f"the time limit can only grow: it is {locked.time_limit_seconds} s, "
                                        f"not more than {time_limit_seconds} s")
            extra = timedelta(seconds=time_limit_seconds - locked.time_limit_seconds)
            Assignment.objects.filter(round=locked, status=Assignment.Status.ASSIGNED).update(
                expires_at=F("expires_at") + extra)
            locked.time_limit_seconds = time_limit_seconds
        if budget_cap is not None:
            if locked.budget_cap is None:
                raise InvalidTransition("the round has no budget cap; a cap would lower it")
            if Decimal(budget_cap) <= locked.budget_cap:
                raise InvalidTransition(f"the budget cap can only grow: it is {locked.budget_cap}, "
                                        f"not more than {budget_cap}")
            locked.budget_cap = Decimal(budget_cap)

    try:
        return _transition(round=round, action="extend", change=change)
    except ValidationError as error:
        raise InvalidTransition(_message(error)) from None


# Qualification rules whose removal lets more workers in (``widen_eligibility``).
WIDENING_RULES = ("providers", "language_matched", "qualified_only", "min_approved_tasks", "max_tasks_per_worker")


def widen_eligibility(*, round: CollectionRound, rules: Iterable[str]) -> CollectionRound:
    """Drop the named qualification rules (from ``WIDENING_RULES``) so more workers may take the round's
    tasks: what unblocks an item no eligible worker remains for. Rules the round does not have are
    refused, as is anything that would narrow it; nothing changes then."""
    rules = list(rules)
    if not rules:
        raise InvalidTransition("name the qualification rules to drop")
    unknown = [rule for rule in rules if rule not in WIDENING_RULES]
    if unknown:
        raise InvalidTransition(f"only these rules can be dropped to widen a round: {', '.join(WIDENING_RULES)}; "
                                f"not {', '.join(unknown)}")

    def change(locked: CollectionRound) -> None:
        missing = [rule for rule in rules if rule not in (locked.qualification_rules or {})]
        if missing:
            raise InvalidTransition(f"the round has no rule {', '.join(missing)}")
        locked.qualification_rules = {key: value for key, value in locked.qualification_rules.items()
                                      if key not in rules}

    return _transition(round=round, action="widen", change=change)


def close_round(*, round: CollectionRound) -> CollectionRound:
    return _transition(round=round, action="close")


def cancel_round(*, round: CollectionRound) -> CollectionRound:
    return _transition(round=round, action="cancel")


# --- assignment engine -----------------------------------------------------------------------------


def expire_stale_assignments(*, round: CollectionRound | None = None, now: datetime | None = None) -> int:
    """Mark assignments past their time limit as expired, freeing their slots; safe to call any time."""
    stale = Assignment.objects.filter(status=Assignment.Status.ASSIGNED, expires_at__lte=now or timezone.now())
    if round is not None:
        stale = stale.filter(round=round)
    return stale.update(status=Assignment.Status.EXPIRED)


def check_worker_may_work(*, round: CollectionRound, worker: Worker, approved_tasks: int | None = None,
                          failed_checks_count: int | None = None, qualified: bool | None = None) -> None:
    """Refuse (RoundNotOpen, NotQualified) a worker who may not take tasks of the round.

    ``approved_tasks``, ``failed_checks_count`` (in this round) and ``qualified`` (for the round's
    project) are given when the caller has them (the work list reads them once for all rounds);
    otherwise each is read here when a rule needs it."""
    if round.status != CollectionRound.Status.OPEN:
        raise RoundNotOpen(_("This round is not open for work."))
    check_worker_meets_rules(round=round, worker=worker, approved_tasks=approved_tasks,
                             failed_checks_count=failed_checks_count, qualified=qualified)


def check_worker_meets_rules(*, round: CollectionRound, worker: Worker, approved_tasks: int | None = None,
                             failed_checks_count: int | None = None, qualified: bool | None = None) -> None:
    """Refuse (NotQualified) a worker whom the round's rules keep out, whatever the round's status: the
    one definition of who is eligible (``check_worker_may_work`` adds that the round is open)."""
    if worker.is_blocked:
        raise NotQualified(_("Your account may not take tasks."))
    rules = round.qualification_rules or {}
    if "providers" in rules and worker.provider not in rules["providers"]:
        raise NotQualified(_("This round is not offered to workers from your crowd platform."))
    if rules.get("language_matched") and round.language not in (worker.languages or []):
        raise NotQualified(_("This round is for workers who work in %(language)s.")
                           % {"language": round.get_language_display()})
    if rules.get("qualified_only"):
        if qualified is None:
            qualified = Qualification.objects.filter(worker=worker, project_id=round.project_id).exists()
        if not qualified:
            raise NotQualified(_("This round is for workers who passed its project's qualification."))
    stop_after = round.quality_policy["stop_after_failed_checks"]
    if failed_checks_count is None and stop_after:
        failed_checks_count = failed_checks(round=round, worker=worker)
    if stop_after and failed_checks_count >= stop_after:
        raise NotQualified(_("Too many of your answers to check questions in this round were wrong; it has "
                             "no more tasks for you."))
    if rules.get("min_approved_tasks"):
        approved = approved_tasks if approved_tasks is not None else Assignment.objects.filter(
            worker=worker, review_status=Assignment.ReviewStatus.APPROVED
        ).count()
        if approved < rules["min_approved_tasks"]:
            raise NotQualified(
                _("This round needs %(needed)d approved tasks; you have %(have)d.")
                % {"needed": rules["min_approved_tasks"], "have": approved}
            )


def failed_checks(*, round: CollectionRound, worker: Worker) -> int:
    """The worker's confirmed answers to the round's gold / attention items that failed their check
    (forged or unconfirmed provider work never counts against a worker)."""
    return Assignment.objects.confirmed().filter(round=round, worker=worker, gold_passed=False).count()


def judgments_needed(*, item: WorkItem, handler=None) -> int:
    """How many counted judgments the item needs now. Fixed rounds: ``workers_per_item``. With adaptive
    overlap (``min_workers_per_item``): that many to start with; then, while the majority at
    ``workers_per_item`` votes is still open, the fewest further votes that could settle it, up to
    ``workers_per_item``; once no further vote can change the majority, the judgments it has."""
    round = item.round
    k_max, k_min = round.workers_per_item, round.min_workers_per_item
    if k_min is None or k_min >= k_max:
        return k_max
    handler = handler or get_task_type(round.task_type)
    labels = [handler.quality_label(assignment) for assignment in item.assignments.counted().select_related("item")]
    if len(labels) < k_min:
        return k_min
    leader = max((labels.count(label) for label in set(labels)), default=0)
    settled_at = k_max // 2 + 1  # a strict majority of k_max votes
    return min(k_max, len(labels) + max(settled_at - leader, 0))


def overlap_savings(*, round: CollectionRound) -> dict:
    """What adaptive overlap saved: judgments on completed items against ``workers_per_item`` each."""
    completed = round.items.filter(completed_at__isnull=False)
    judgments = Assignment.objects.counted().filter(item__in=completed).count()
    fixed = completed.count() * round.workers_per_item
    return {"items_completed": completed.count(), "judgments": judgments, "fixed_judgments": fixed,
            "saved": fixed - judgments, "saved_share": (fixed - judgments) / fixed if fixed else 0.0}


# Assignment foreign keys whose rows the engine has loaded itself: full_clean need not look them up.
_ROWS_IN_HAND = ["round", "item", "worker"]


def _slots_taken_subquery():
    held = (
        Assignment.objects.holding_a_slot()
        .filter(item=OuterRef("pk"))
        .order_by()
        .values("item")
        .annotate(taken=Count("pk"))
        .values("taken")
    )
    return Coalesce(Subquery(held, output_field=IntegerField()), Value(0))


def _take_locked_item(
    *, round: CollectionRound, item: WorkItem, worker: Worker, now: datetime, rng: random.Random,
    provider_assignment_id: str, provider_task_id: str, hold_seconds: int | None = None,
) -> Assignment | None:
    """With the item row locked: recount its slots and, if one is free, give it to the worker."""
    if item.completed_at is not None:
        return None
    # One query for both: whether the worker already had the item, and how many slots are held.
    counts = Assignment.objects.filter(item=item).aggregate(
        mine=Count("pk", filter=Q(worker=worker)),
        held=Count("pk", filter=Q(pk__in=Assignment.objects.holding_a_slot().filter(item=item).values("pk"))),
    )
    if counts["mine"]:
        return None
    handler = get_task_type(round.task_type)
    if counts["held"] >= judgments_needed(item=item, handler=handler):
        return None
    if not item_fits(item=item, handler=handler):
        return None
    assignment = _new_assignment(round=round, item=item, worker=worker, now=now, rng=rng, handler=handler,
                                 provider_assignment_id=provider_assignment_id, provider_task_id=provider_task_id,
                                 hold_seconds=hold_seconds)
    assignment.save()
    return assignment


def _new_assignment(*, round, item, worker, now, rng, handler, provider_assignment_id, provider_task_id,
                    hold_seconds: int | None = None) -> Assignment:
    """The unsaved, validated assignment of the item to the worker; held ``hold_seconds`` at most."""
    seconds = round.time_limit_seconds if hold_seconds is None else min(round.time_limit_seconds, hold_seconds)
    assignment = Assignment(
        round=round,
        item=item,
        worker=worker,
        accepted_at=now,
        expires_at=now + timedelta(seconds=seconds),
        presentation=handler.present(item=item, rng=rng),
        provider_assignment_id=provider_assignment_id,
        provider_task_id=provider_task_id,
        # A worker who logged in to the platform is who they say; a provider's worker counts once
        # the provider confirms the work (``record_confirmation``).
        confirmation=(Assignment.Confirmation.CONFIRMED if worker.user_id is not None
                      else Assignment.Confirmation.UNCONFIRMED),
        confirmed_at=now if worker.user_id is not None else None,
    )
    # Only field validation: the unique constraints are enforced by the database, and the round,
    # item and worker rows are in hand (checking that they exist would cost a query each).
    assignment.full_clean(exclude=_ROWS_IN_HAND, validate_constraints=False)
    return assignment


@dataclass(frozen=True)
class WorkerFacts:
    """What "next task" needs to know about one worker in a round, read with the round (one query)."""

    worker_id: int
    failed_checks: int  # confirmed answers to check items that failed (``failed_checks``)
    done: int  # submitted tasks (``selectors.worker_progress``)
    items: int  # items of the round
    qualified: bool  # for the round's project
    consent_sha256: str | None  # of the study information the worker accepted, if any
    has_open_assignment: bool  # an assignment with status "assigned", expired or not


def read_round_for_worker(*, round_id: Any, worker: Worker) -> CollectionRound:
    """The round as it is now, with ``round.worker_facts`` (``WorkerFacts``) about the worker, in one
    query. Raises ``CollectionRound.DoesNotExist``. The facts hold for the request that read them."""
    try:
        round_id = int(round_id)
    except (TypeError, ValueError):
        raise CollectionRound.DoesNotExist from None
    row = _round_with_worker_facts.first(round_id=round_id, worker_id=worker.pk)
    if row is None:
        raise CollectionRound.DoesNotExist
    row.worker_facts = WorkerFacts(
        worker_id=worker.pk, failed_checks=row.facts_failed_checks, done=row.facts_done, items=row.facts_items,
        qualified=row.facts_qualified, consent_sha256=row.facts_consent, has_open_assignment=row.facts_open,
    )
    return row


def _build_round_with_worker_facts(_shape, round_id: int, worker_id: int):
    mine = Assignment.objects.filter(round=OuterRef("pk"), worker=worker_id)
    return (
        CollectionRound.objects.filter(pk=round_id)
        .annotate(
            facts_failed_checks=_count_per_round(mine.confirmed().filter(gold_passed=False)),
            facts_done=_count_per_round(mine.filter(status=Assignment.Status.SUBMITTED)),
            facts_items=_count_per_round(WorkItem.objects.filter(round=OuterRef("pk"))),
            facts_qualified=Exists(Qualification.objects.filter(worker=worker_id, project=OuterRef("project_id"))),
            facts_consent=Subquery(ConsentDecision.objects.filter(round=OuterRef("pk"), worker=worker_id, accepted=True)
                                   .values("text_sha256")[:1]),
            facts_open=Exists(mine.filter(status=Assignment.Status.ASSIGNED)),
        )
        .order_by()[:1]
    )


# Every "next task" reads it: compiled once (``crowdbench.prepared``).
_round_with_worker_facts = PreparedQuery(_build_round_with_worker_facts)


def worker_facts(*, round: CollectionRound, worker: Worker) -> WorkerFacts | None:
    """The facts read with this round object for this worker (``read_round_for_worker``), if any."""
    facts = getattr(round, "worker_facts", None)
    return facts if facts is not None and facts.worker_id == worker.pk else None


def _count_per_round(queryset):
    counted = queryset.order_by().values("round").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def request_assignment(
    *,
    round: CollectionRound,
    worker: Worker,
    now: datetime | None = None,
    rng: random.Random | None = None,
    provider_assignment_id: str = "",
    provider_task_id: str = "",
    item: WorkItem | None = None,
    budget_allows: Callable[[CollectionRound, Worker], bool] | None = None,
    arrival_hold: Callable[[], dict] | None = None,
) -> Assignment | None:
    """The worker's open assignment in the round, or a new one on an item they have not done; None when
    nothing is left for them (so in a complete round).

    ``item`` restricts the choice to that one item (a provider task that is one item, such as an
    MTurk HIT); an open assignment on another item is then refused. ``budget_allows(round, worker)``
    replaces the default budget check (rewards of the slots taken), e.g. to count provider fees; it
    runs with the round row locked.

    ``arrival_hold()``, called once the worker may work and before anything is reserved, may refuse
    (a CrowdWorkError: the worker's provider does not show them on this task) or return
    ``{"hold_seconds": s, "hold_limit": n}`` for an arrival the provider could not vouch for: the
    task then expires after ``s`` seconds (at most the round's time limit), and none is given while
    the round already holds ``n`` such tasks taken in the last ``s`` seconds (counted with the round
    row locked); ``{}`` holds it for the round's time limit.

    The round is read again unless it comes from ``read_round_for_worker`` in this request.

    Safe under concurrency: each candidate item is locked (skipping rows other requests hold) and its
    free slots are counted under the lock; the (item, worker) and one-open-per-round unique
    constraints catch anything else. On SQLite the transaction itself serialises writers.
    """
    now = now or timezone.now()
    rng = rng or random.SystemRandom()
    facts = worker_facts(round=round, worker=worker)
    if facts is None:
        round = read_round_for_worker(round_id=round.pk, worker=worker)
        facts = round.worker_facts
    if round.status == CollectionRound.Status.COMPLETE:
        return None  # every item has its judgments: nothing is left for anyone
    check_worker_may_work(round=round, worker=worker, failed_checks_count=facts.failed_checks,
                          qualified=facts.qualified)
    if not consent.has_accepted(round=round, worker=worker, accepted_sha256=facts.consent_sha256):
        # Every page and API that hands out tasks comes here: none before the study information is accepted.
        raise ConsentRequired(_("Please read the study information and agree to it before the first task."))
    hold = arrival_hold() if arrival_hold is not None else {}
    hold_seconds, hold_limit = hold.get("hold_seconds"), hold.get("hold_limit")
    take = dict(round=round, worker=worker, now=now, rng=rng, hold_seconds=hold_seconds,
                provider_assignment_id=provider_assignment_id, provider_task_id=provider_task_id)
    if (item is None and budget_allows is None and hold_seconds is None and not facts.has_open_assignment
            and _plain_round(round)):
        assignment = _claim_first_free_item(**take)
        if assignment is not None:
            return assignment
    # The careful path: no free item found above, or a rule that needs more than one look.
    # Outside the main transaction: a short statement, so concurrent requests do not hold these rows.
    expire_stale_assignments(round=round, now=now)
    try:
        with transaction.atomic():
            return _request_assignment_locked(**take, only_item=item, budget_allows=budget_allows,
                                              hold_limit=hold_limit)
    except IntegrityError:
        # A concurrent request of the same worker won the race; hand out what it created.
        existing = Assignment.objects.filter(
            round=round, worker=worker, status=Assignment.Status.ASSIGNED
        ).first()
        if existing is None:
            raise
        return existing


def _plain_round(round: CollectionRound) -> bool:
    """A round whose next free item can be claimed in one step: a fixed number of judgments per item,
    no budget cap, no per-worker task limit."""
    fixed = round.min_workers_per_item is None or round.min_workers_per_item >= round.workers_per_item
    return fixed and round.budget_cap is None and "max_tasks_per_worker" not in (round.qualification_rules or {})


class _NotClaimed(Exception):
    """The quick claim found nothing it could take for sure; the careful path decides."""


def _claim_first_free_item(*, round, worker, now, rng, provider_assignment_id, provider_task_id,
                           hold_seconds=None) -> Assignment | None:
    """The common case in two statements: lock the first item (by position) that has a free slot, is
    not the worker's and that no other request holds (SKIP LOCKED), then insert the assignment only if
    a recount in the same statement still finds a slot free (the lock's snapshot may miss an assignment
    committed just before the lock was granted). None when that does not work out; the transaction
    is then rolled back, releasing the lock, and the caller takes the careful path.

    Expired assignments are not expired first: they keep their slots until the careful path or the
    periodic command expires them, so a stale one never makes an item look free."""
    handler = get_task_type(round.task_type)
    try:
        with transaction.atomic():
            item = _first_free_item.first(handler.key, round_id=round.pk, worker_id=worker.pk,
                                          needed=round.workers_per_item)
            if item is None or not item_fits(item=item, handler=handler):
                raise _NotClaimed
            item.round = round
            assignment = _new_assignment(round=round, item=item, worker=worker, now=now, rng=rng, handler=handler,
                                         provider_assignment_id=provider_assignment_id,
                                         provider_task_id=provider_task_id, hold_seconds=hold_seconds)
            if not _insert_if_slot_free(assignment, needed=round.workers_per_item):
                raise _NotClaimed
            return assignment
    except (_NotClaimed, IntegrityError):
        # IntegrityError: a concurrent request of the same worker took a task first.
        return None


def wanted_items(queryset, *, handler: TaskType):
    """``queryset`` (items of ``handler``'s type) without the ones another item has settled
    (``TaskType.settled_items``): no task is handed out on those."""
    settled = handler.settled_items()
    return queryset if settled is None else queryset.exclude(settled)


def _build_first_free_item(task_type: str, round_id: int, worker_id: int, needed: int):
    """The first item (by position) of the round with a slot free and none of the worker's, not
    settled by another item, locked unless another request holds it; with the task type's targets joined."""
    handler = get_task_type(task_type)
    return (
        wanted_items(WorkItem.objects.select_for_update(skip_locked=True, no_key=True, of=("self",))
                     .select_related(*handler.target_fields, *handler.shown_with_item), handler=handler)
        .filter(round=round_id, completed_at__isnull=True)
        .exclude(pk__in=Assignment.objects.filter(worker=worker_id, round=round_id).values("item"))
        .annotate(taken=_slots_taken_subquery())
        .filter(taken__lt=needed)
        .order_by("position")[:1]
    )


# The quick claim of every "next task": compiled once per task type's joins (``crowdbench.prepared``).
_first_free_item = PreparedQuery(_build_first_free_item)


# The slots an item holds, and its counted judgments: read by every claim and every submission.
_slots_held = PreparedQuery(
    lambda _shape, item_id: Assignment.objects.holding_a_slot().filter(item_id=item_id).order_by().values("pk"))
_judgments_counted = PreparedQuery(
    lambda _shape, item_id: Assignment.objects.counted().filter(item_id=item_id).order_by()
    .values("item").annotate(n=Count("pk")).values_list("n", flat=True))


def _insert_if_slot_free(assignment: Assignment, *, needed: int) -> bool:
    """INSERT the assignment if its item holds fewer than ``needed`` slots and none of its worker's, in
    one statement (a fresh snapshot under READ COMMITTED); whether it was inserted."""
    from django.db import connection
    from django.db.models.sql import InsertQuery

    fields = [field for field in Assignment._meta.concrete_fields if not field.primary_key]
    query = InsertQuery(Assignment)
    query.insert_values(fields, [assignment])
    compiler = query.get_compiler(connection=connection)
    placeholders, params = [], []
    for field in fields:
        value = compiler.prepare_value(field, compiler.pre_save_val(field, assignment))
        sql, field_params = compiler.field_as_sql(field, getattr(field, "get_placeholder", None), value)
        placeholders.append(sql)
        params.extend(field_params)
    held_sql, held_params = _slots_held.sql(item_id=assignment.item_id)
    quote = connection.ops.quote_name
    table = quote(Assignment._meta.db_table)
    sql = (
        f"INSERT INTO {table} ({', '.join(quote(field.column) for field in fields)}) "
        f"SELECT {', '.join(placeholders)} "
        f"WHERE (SELECT COUNT(*) FROM ({held_sql}) held) < %s "
        f"AND NOT EXISTS (SELECT 1 FROM {table} WHERE {quote('item_id')} = %s AND {quote('worker_id')} = %s) "
        f"RETURNING {quote('id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *held_params, needed, assignment.item_id, assignment.worker_id])
        row = cursor.fetchone()
    if row is None:
        return False
    assignment.pk = row[0]
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return True


def _request_assignment_locked(
    *, round, worker, now, rng, provider_assignment_id, provider_task_id, only_item, budget_allows,
    hold_seconds=None, hold_limit=None,
) -> Assignment | None:
    existing = Assignment.objects.filter(
        round=round, worker=worker, status=Assignment.Status.ASSIGNED, expires_at__gt=now
    ).first()
    if existing is not None:
        existing.round, existing.worker = round, worker
        if only_item is not None and existing.item_id != only_item.pk:
            raise AssignmentNotActive(_("Finish or return your other task of this round first."))
        return existing
    if hold_seconds is not None and hold_limit is not None:
        # Unvouched arrivals hold few slots at once: lock the round so concurrent ones count each other.
        CollectionRound.objects.select_for_update(no_key=True).order_by().get(pk=round.pk)
        held = Assignment.objects.filter(
            round=round, status=Assignment.Status.ASSIGNED, confirmation=Assignment.Confirmation.UNCONFIRMED,
            expires_at__gt=now, accepted_at__gt=now - timedelta(seconds=hold_seconds),
        ).count()
        if held >= hold_limit:
            return None
    rules = round.qualification_rules or {}
    if "max_tasks_per_worker" in rules:
        done = Assignment.objects.holding_a_slot().filter(round=round, worker=worker).count()
        if done >= rules["max_tasks_per_worker"]:
            return None
    if round.budget_cap is not None:
        # Lock the round so concurrent requests cannot together overshoot the cap.
        CollectionRound.objects.select_for_update(no_key=True).order_by().get(pk=round.pk)
        if budget_allows is not None:
            if not budget_allows(round, worker):
                return None
        else:
            committed = Assignment.objects.holding_a_slot().filter(round=round).count()
            if (committed + 1) * round.reward_per_task > round.budget_cap:
                return None
    candidates = wanted_items(WorkItem.objects.filter(round=round, completed_at__isnull=True),
                              handler=get_task_type(round.task_type))
    if only_item is not None:
        candidates = candidates.filter(pk=only_item.pk)
    candidate_ids = list(
        candidates
        .exclude(pk__in=Assignment.objects.filter(worker=worker, round=round).values("item"))
        .annotate(taken=_slots_taken_subquery())
        .filter(taken__lt=round.workers_per_item)
        .order_by("position")
        .values_list("pk", flat=True)[:CANDIDATE_BATCH]
    )
    take = dict(
        round=round, worker=worker, now=now, rng=rng, hold_seconds=hold_seconds,
        provider_assignment_id=provider_assignment_id, provider_task_id=provider_task_id,
    )
    busy = []
    for item_id in candidate_ids:
        assignment, was_busy = _attempt_item(item_id=item_id, skip_locked=True, **take)
        if assignment is not None:
            return assignment
        if was_busy:
            busy.append(item_id)
    # Every free item was held by another request: wait for those rows rather than report no work.
    # Safe from deadlocks because a failed attempt keeps no lock, so a waiting request holds none.
    for item_id in busy:
        assignment, _was_busy = _attempt_item(item_id=item_id, skip_locked=False, **take)
        if assignment is not None:
            return assignment
    return None


def _attempt_item(*, item_id: int, skip_locked: bool, **take) -> tuple[Assignment | None, bool]:
    """Try one item in a savepoint: (the new assignment or None, whether the row was locked by others)."""
    # The round's own targets come with the locked row (the lock covers the item row only): checking
    # and presenting the item then costs no query. Only these: every extra join slows the planner.
    targets = get_task_type(take["round"].task_type).target_fields
    with transaction.atomic():
        item = (
            WorkItem.objects.select_for_update(skip_locked=skip_locked, no_key=True, of=("self",))
            .select_related(*targets)
            .filter(pk=item_id)
            .order_by()
            .first()
        )
        if item is None:
            return None, skip_locked
        assignment = _take_locked_item(item=item, **take)
        if assignment is None:
            # Rolling back the savepoint releases the row lock now instead of at commit.
            transaction.set_rollback(True)
        return assignment, False


def item_fits(*, item: WorkItem, handler) -> bool:
    """Whether a stored item still fits its round's task type (it may have been written past the checks)."""
    try:
        handler.check_item(item)
    except (ValidationError, ObjectDoesNotExist):
        logger.warning("item %s of round %s does not fit its task type; not handed out", item.pk, item.round_id,
                       exc_info=True)
        return False
    return True


# What a stored item that no longer fits can raise while its page is built.
_BROKEN_ITEM_ERRORS = (ValidationError, ObjectDoesNotExist, AttributeError, KeyError, TypeError, ValueError)


def task_view(*, assignment: Assignment) -> dict:
    """The task as its page and the API show it. An item that does not fit its task type (written
    straight to the database, say) gives its assignment back and is refused with ``BrokenItem``,
    so the worker gets the next task on reload instead of the same failure."""
    handler = get_task_type(assignment.round.task_type)
    try:
        handler.check_item(assignment.item)
        return handler.context(assignment)
    except _BROKEN_ITEM_ERRORS:
        logger.exception("assignment %s: item %s cannot be shown; giving it back", assignment.pk, assignment.item_id)
    with transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ASSIGNED).update(
            status=Assignment.Status.RETURNED
        )
    raise BrokenItem(_("This task cannot be shown and was given back; please take the next one."))


def task_preview(*, item: WorkItem, rng: random.Random | None = None) -> tuple[Assignment, dict]:
    """The item's task as a worker would see it, on an unsaved assignment: nothing is reserved and
    nothing can be submitted (the MTurk preview, the cockpit's preview). An item that no longer
    fits its task type is refused with ``BrokenItem`` (409), never a 500."""
    round = item.round
    handler = get_task_type(round.task_type)
    if not item_fits(item=item, handler=handler):
        raise BrokenItem(_("This task cannot be shown: its item no longer fits the task type."))
    now = timezone.now()
    preview = Assignment(round=round, item=item, accepted_at=now,
                         expires_at=now + timedelta(seconds=round.time_limit_seconds),
                         presentation=handler.present(item=item, rng=rng or random.SystemRandom()))
    try:
        return preview, handler.context(preview)
    except _BROKEN_ITEM_ERRORS:
        logger.exception("item %s of round %s cannot be shown", item.pk, round.pk)
    raise BrokenItem(_("This task cannot be shown: its item no longer fits the task type."))


@transaction.atomic
def return_assignment(*, assignment_id: int, worker: Worker) -> Assignment:
    """The worker gives the task back; its slot goes to someone else."""
    assignment = _locked_assignment_of(assignment_id=assignment_id, worker=worker)
    if assignment.status != Assignment.Status.ASSIGNED:
        raise AssignmentNotActive(_("This task is no longer open."))
    assignment.status = Assignment.Status.RETURNED
    assignment.save(update_fields=["status"])
    return assignment


# --- submissions -----------------------------------------------------------------------------------


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


# Every submission reads both: compiled once (``crowdbench.prepared``).
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
        raise _invalid_submission(error) from None
    uploads = {key: value for key, value in validated.items() if key.startswith("_")}
    payload = {key: value for key, value in validated.items() if not key.startswith("_")}
    input_stats = None
    if handler.records_typing:
        try:
            input_stats = guardrails.clean_input_stats(data.get("typing"))
        except ValidationError as error:
            raise _invalid_submission(error) from None

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
    assignment.status = Assignment.Status.SUBMITTED
    assignment.review_status = Assignment.ReviewStatus.SUBMITTED
    assignment.submitted_at = now
    assignment.duration_seconds = max((now - assignment.accepted_at).total_seconds(), 0.0)
    assignment.result = handler.result(assignment)
    assignment.input_stats = input_stats
    # The row is locked since it was read: only the fields a submission sets are written (a task
    # type's ``apply`` sets ``result`` at most).
    changed = ["payload", "status", "review_status", "submitted_at", "duration_seconds", "result", "input_stats"]
    if _changes_data(handler):
        try:
            with transaction.atomic():
                handler.apply(assignment, uploads=uploads)
        except ValidationError as error:
            raise _invalid_submission(error) from None
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
    assignment.full_clean(exclude=_ROWS_IN_HAND, validate_constraints=False)
    assignment.save(update_fields=changed)
    _complete_item_if_done(item_id=item.pk, now=now, locked=item)
    _qualify_if_passed(round=assignment.round, worker=worker)
    return SubmitOutcome(assignment=assignment, created=True)


def _changes_data(handler) -> bool:
    """Whether the task type has effects of its own on submission (its ``apply``); its savepoint is
    skipped when not."""
    return type(handler).apply is not TaskType.apply


def qualifying_result(*, round: CollectionRound, worker: Worker) -> dict | None:
    """In a qualifying round (rule ``qualifies_for_project``): the worker's gold answers, how many
    passed, whether all items are answered and whether that passes; None in any other round."""
    threshold = (round.qualification_rules or {}).get("qualifies_for_project")
    if threshold is None:
        return None
    answered = list(Assignment.objects.confirmed().filter(round=round, worker=worker, gold_passed__isnull=False)
                    .values_list("gold_passed", flat=True))
    finished = len(answered) >= round.items.filter(is_gold=True).count()
    passed = sum(answered)
    return {"answers": len(answered), "passed": passed, "finished": finished,
            "qualified": finished and bool(answered) and passed >= threshold * len(answered)}


def _qualify_if_passed(*, round: CollectionRound, worker: Worker) -> None:
    result = qualifying_result(round=round, worker=worker)
    if result and result["qualified"] and round.project_id is not None:
        grant_qualification(worker=worker, project=round.project, source=Qualification.Source.QUALIFYING_ROUND)


def _complete_item_if_done(*, item_id: int, now: datetime, locked: WorkItem | None = None) -> None:
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
        _complete_round_if_done(round_id=item.round_id)


# PostgreSQL's "lock not available" (a NOWAIT lock another transaction holds).
_LOCK_NOT_AVAILABLE = "55P03"


def _complete_round_if_done(*, round_id: int) -> None:
    """In the transaction that completed an item: the round becomes complete if that was its last open
    item (``_transition`` "complete").

    Two items completing at once in separate transactions must not each see the other still open
    and leave the round open for ever: each completer holds the round row while it counts the open
    items (a statement after the lock, so it sees every completion committed before). The lock is
    asked for without waiting (an item lock is held here, and a budget-capped request holds the
    round while it waits for items): when another transaction holds the round, the check runs again
    as soon as this one commits, when it holds no lock and sees its own completion."""
    try:
        with transaction.atomic():
            round = (CollectionRound.objects.select_for_update(nowait=True, no_key=True)
                     .only("pk", "status").order_by().get(pk=round_id))
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
            raise
        transaction.on_commit(lambda: complete_round_if_done(round_id=round_id))
        return
    if round.status == CollectionRound.Status.OPEN and not _has_open_items(round):
        _transition(round=round, action="complete")
        logger.info("round %s complete: every item has its judgments", round_id)


def complete_round_if_done(*, round_id: int) -> CollectionRound | None:
    """Make the open round complete if none of its items needs more work; safe to call any time
    (the engine does when an item completes). Returns the round when it became complete."""
    with transaction.atomic():
        round = CollectionRound.objects.select_for_update(no_key=True).order_by().filter(pk=round_id).first()
        if round is None or round.status != CollectionRound.Status.OPEN or not round.items.exists():
            return None
        if _has_open_items(round):
            return None
        return _transition(round=round, action="complete")


def on_item_completed(*, item: WorkItem) -> None:
    """The single place where an item that has all its judgments moves things on.

    Runs the task type's aggregation (verification verdicts, caption choice, pairwise majority),
    stores what it returns, then the type's completion hook (its follow-up stage). Runs inside the
    submitting transaction.
    """
    handler = get_task_type(item.round.task_type)
    _store_aggregate(item=item, handler=handler)
    if not item.is_gold:  # a gold item scores workers; it decides nothing about the benchmark data
        handler.on_completed(item)
    logger.info("item %s of round %s completed", item.pk, item.round_id)


def gold_summary(item: WorkItem) -> dict:
    """The aggregate of a gold / attention item: how many counted answers passed its check. The task
    type's aggregation (verdicts, majority winners) never runs on gold, so gold enters no evaluation data."""
    passed = list(item.assignments.counted().values_list("gold_passed", flat=True))
    return {"gold": True, "judgments": len(passed), "passed": sum(1 for value in passed if value)}


def _store_aggregate(*, item: WorkItem, handler) -> None:
    try:
        item.aggregate_result = gold_summary(item) if item.is_gold else handler.aggregate(item)
    except ValidationError as error:
        raise InvalidTransition(_message(error)) from None
    item.save(update_fields=["aggregate_result"])


# --- provider confirmation -------------------------------------------------------------------------

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
                _complete_item_if_done(item_id=item.pk, now=now)
            else:
                _store_aggregate(item=item, handler=get_task_type(item.round.task_type))
            # A qualifying round's answers count once confirmed: the qualification may be earned now.
            _qualify_if_passed(round=item.round, worker=Worker.objects.get(pk=locked.worker_id))
    return locked


# --- review ----------------------------------------------------------------------------------------

# The engine's record of a review decision: a submission is approved or rejected once.
REVIEW_TRANSITIONS = {
    Assignment.ReviewStatus.SUBMITTED: {Assignment.ReviewStatus.APPROVED, Assignment.ReviewStatus.REJECTED},
}


def _record_review(*, assignment: Assignment, status: str, feedback: str) -> Assignment:
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
        if status not in REVIEW_TRANSITIONS.get(locked.review_status, set()):
            raise InvalidTransition(
                _("A submission that is %(now)s cannot be %(next)s.")
                % {"now": locked.get_review_status_display().lower(), "next": status}
            )
        locked.review_status = status
        locked.reviewed_at = timezone.now()
        locked.review_feedback = feedback
        locked.full_clean(validate_constraints=False)
        locked.save()
        if status == Assignment.ReviewStatus.REJECTED:
            _after_rejection(item_id=locked.item_id)
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
    _store_aggregate(item=item, handler=handler)
    if Assignment.objects.counted().filter(item=item).count() >= judgments_needed(item=item, handler=handler):
        return  # adaptive overlap: the majority still stands without the rejected vote
    if item.round.status in ACTIVE_STATUSES:
        item.completed_at = None
        item.save(update_fields=["completed_at"])
        if item.round.status == CollectionRound.Status.COMPLETE:
            item.round = _transition(round=item.round, action="reopen")  # the item needs another worker
        if item.is_gold:
            return
        try:
            handler.on_reopened(item)
        except ValidationError as error:
            raise InvalidTransition(_message(error)) from None
        logger.info("item %s of round %s reopened after a rejection", item.pk, item.round_id)


def approve_assignment(*, assignment: Assignment, feedback: str = "") -> Assignment:
    """Record that the submission was approved (the provider acts first; see providers.services)."""
    return _record_review(assignment=assignment, status=Assignment.ReviewStatus.APPROVED, feedback=feedback)


def reject_assignment(*, assignment: Assignment, feedback: str = "") -> Assignment:
    """Record that the submission was rejected. Its judgment stops counting: before the item completes
    the slot is free for another worker; after, the item's aggregate is recomputed without it and,
    while the round is open, the item is open again for one more worker."""
    return _record_review(assignment=assignment, status=Assignment.ReviewStatus.REJECTED, feedback=feedback)


def mark_work_history_seen(*, worker: Worker) -> None:
    """The worker has looked at their work and its reviews: feedback given until now is no longer new."""
    worker.work_history_seen_at = timezone.now()
    Worker.objects.filter(pk=worker.pk).update(work_history_seen_at=worker.work_history_seen_at)


__all__ = [
    "AssignmentNotActive",
    "AssignmentNotFound",
    "BrokenItem",
    "ConflictingResubmission",
    "ConsentRequired",
    "CrowdWorkError",
    "InvalidSubmission",
    "InvalidTransition",
    "NotQualified",
    "NotYourAssignment",
    "RoundNotOpen",
    "SubmitOutcome",
    "ACTIVE_STATUSES",
    "add_items",
    "allowed_actions",
    "approve_assignment",
    "mark_work_history_seen",
    "cancel_round",
    "check_worker_may_work",
    "check_worker_meets_rules",
    "close_round",
    "complete_round_if_done",
    "create_round",
    "wanted_items",
    "expire_stale_assignments",
    "extend_round",
    "failed_checks",
    "get_or_create_local_worker",
    "qualifying_result",
    "judgments_needed",
    "overlap_savings",
    "grant_qualification",
    "gold_summary",
    "local_worker_for",
    "on_item_completed",
    "open_round",
    "pause_round",
    "record_confirmation",
    "reject_assignment",
    "request_assignment",
    "resume_round",
    "return_assignment",
    "set_worker_languages",
    "submit_assignment",
    "task_preview",
    "task_view",
    "widen_eligibility",
    "WIDENING_RULES",
]
