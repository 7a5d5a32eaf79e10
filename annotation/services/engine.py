"""The assignment engine: which task a worker gets next, under concurrency, and showing it.

Each candidate item is locked while its free slots are counted; the common case is claimed in two
statements (``_claim_first_free_item``), anything with a rule that needs more than one look takes
the careful path (``_request_assignment_locked``).
"""
from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta
from typing import Callable

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.prepared import PreparedQuery, compiler_internals_supported
from djangokit.transitions import move_all

from .. import consent
from ..eligibility import check_worker_may_work, judgments_needed, read_round_for_worker, worker_facts
from ..errors import BROKEN_ITEM_ERRORS, AssignmentNotActive, BrokenItem, ConsentRequired
from ..models import ASSIGNMENT_CONFIRMATION, ASSIGNMENT_STATUS, Assignment, CollectionRound, Worker, WorkItem
from ..task_types import get_task_type
from ..task_types.base import TaskType

logger = logging.getLogger(__name__)

# Candidates the engine looks at per request; more than enough, since each attempt locks one row.
CANDIDATE_BATCH = 200


def expire_stale_assignments(*, round: CollectionRound | None = None, now: datetime | None = None) -> int:
    """Mark assignments past their time limit as expired, freeing their slots; safe to call any time.

    A task only looked at (``in_preview``) whose look ran out before the worker started it leaves no
    row: nobody worked on it, and a row would keep its worker from the item for good (one assignment
    per item and worker), so a worker who looked and left could never come back to it."""
    stale = Assignment.objects.filter(status=Assignment.Status.ASSIGNED, expires_at__lte=now or timezone.now())
    if round is not None:
        stale = stale.filter(round=round)
    stale.filter(in_preview=True).delete()
    return move_all(stale.filter(in_preview=False), ASSIGNMENT_STATUS, "expire")


# Assignment foreign keys whose rows the engine has loaded itself: full_clean need not look them up.
ROWS_IN_HAND = ["round", "item", "worker"]


def _slots_taken_subquery(holds=None):
    """The slots each item (the outer row) holds: ``holds``, ``holding_a_slot`` by default."""
    held = (
        (Assignment.objects.holding_a_slot() if holds is None else holds)
        .filter(item=OuterRef("pk"))
        .order_by()
        .values("item")
        .annotate(taken=Count("pk"))
        .values("taken")
    )
    return Coalesce(Subquery(held, output_field=IntegerField()), Value(0))


def _take_locked_item(
    *, round: CollectionRound, item: WorkItem, worker: Worker, now: datetime, rng: random.Random,
    provider_assignment_id: str, provider_task_id: str, hold_seconds: int | None = None, in_preview: bool = False,
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
                                 hold_seconds=hold_seconds, in_preview=in_preview)
    assignment.save()
    return assignment


def _new_assignment(*, round, item, worker, now, rng, handler, provider_assignment_id, provider_task_id,
                    hold_seconds: int | None = None, in_preview: bool = False) -> Assignment:
    """The unsaved, validated assignment of the item to the worker; held ``hold_seconds`` at most
    (``in_preview``: for a look, until the worker starts it)."""
    seconds = round.time_limit_seconds if hold_seconds is None else min(round.time_limit_seconds, hold_seconds)
    assignment = Assignment(
        round=round,
        item=item,
        worker=worker,
        accepted_at=now,
        expires_at=now + timedelta(seconds=seconds),
        in_preview=in_preview,
        presentation=handler.present(item=item, rng=rng),
        provider_assignment_id=provider_assignment_id,
        provider_task_id=provider_task_id,
        # A worker who logged in to the platform is who they say; a provider's worker counts once
        # the provider confirms the work (``record_confirmation``).
        confirmation=ASSIGNMENT_CONFIRMATION.check_initial(
            Assignment.Confirmation.CONFIRMED if worker.user_id is not None else Assignment.Confirmation.UNCONFIRMED),
        confirmed_at=now if worker.user_id is not None else None,
    )
    # Only field validation: the unique constraints are enforced by the database, and the round,
    # item and worker rows are in hand (checking that they exist would cost a query each).
    assignment.full_clean(exclude=ROWS_IN_HAND, validate_constraints=False)
    return assignment


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
    preview: bool = False,
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

    ``preview``: a page shows the task before the worker starts it; a new one is held only for
    ``TASK_PREVIEW_SECONDS`` (``in_preview``), and gets the round's time limit when the worker starts
    it (``start_assignment``). Workers only looking then do not hold items others need.

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
    if preview:
        hold_seconds = min(settings.TASK_PREVIEW_SECONDS, hold_seconds or settings.TASK_PREVIEW_SECONDS)
    take = dict(round=round, worker=worker, now=now, rng=rng, hold_seconds=hold_seconds, in_preview=preview,
                provider_assignment_id=provider_assignment_id, provider_task_id=provider_task_id)
    if (item is None and budget_allows is None and hold_limit is None and not facts.has_open_assignment
            and _plain_round(round)):
        assignment = _claim_first_free_item(**take)
        if assignment is not None:
            return assignment
        if not _any_slot_for(round=round, worker=worker, now=now):
            # Nothing the careful path could find either (near a round's end, every worker's request
            # comes here at once): one statement instead of its expiry and locked look.
            return None
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


def _any_slot_for(*, round: CollectionRound, worker: Worker, now: datetime) -> bool:
    """Whether the careful path could find the worker a task: an open item, not settled, none of the
    worker's, with fewer than ``workers_per_item`` slots held once expired holds are let go (it expires
    them first). No lock is taken, so an item another request is claiming counts as possibly free;
    a worker's own look that ran out does not keep the item from them (the careful path deletes it)."""
    return _an_item_with_a_slot.first(round.task_type, round_id=round.pk, worker_id=worker.pk,
                                      needed=round.workers_per_item, now=now) is not None


def _build_an_item_with_a_slot(task_type: str, round_id: int, worker_id: int, needed: int, now: datetime):
    mine = Assignment.objects.filter(worker=worker_id, round=round_id).without_lapsed_looks(now).values("item")
    return (
        wanted_items(WorkItem.objects.filter(round=round_id, completed_at__isnull=True),
                     handler=get_task_type(task_type))
        .exclude(pk__in=mine)
        .annotate(taken=_slots_taken_subquery(Assignment.objects.holding_a_slot_at(now)))
        .filter(taken__lt=needed)
        .order_by()
        .values_list("pk", flat=True)[:1]
    )


# Asked by every request the quick claim left empty-handed (each worker's last one in a round): compiled once.
_an_item_with_a_slot = PreparedQuery(_build_an_item_with_a_slot)


def _plain_round(round: CollectionRound) -> bool:
    """A round whose next free item can be claimed in one step: a fixed number of judgments per item,
    no budget cap, no per-worker task limit."""
    fixed = round.min_workers_per_item is None or round.min_workers_per_item >= round.workers_per_item
    return fixed and round.budget_cap is None and "max_tasks_per_worker" not in (round.qualification_rules or {})


# Tries of the quick claim when another request fills the item's last slot between the claim's read
# and its insert (frequent with many workers on the same items); the careful path costs several times more.
QUICK_CLAIM_ATTEMPTS = 2


class _NotClaimed(Exception):
    """Another request filled the item's last slot after the claim read it: its transaction rolls back."""


def _claim_first_free_item(*, round, worker, now, rng, provider_assignment_id, provider_task_id,
                           hold_seconds=None, in_preview=False) -> Assignment | None:
    """The common case in two statements: lock the first item (by position) that has a free slot, is
    not the worker's and that no other request holds (SKIP LOCKED), then insert the assignment only if
    a recount in the same statement still finds a slot free (the lock's snapshot may miss an assignment
    committed just before the lock was granted); when the recount finds the item full, the transaction
    is rolled back, releasing the lock, and the claim tries again (``QUICK_CLAIM_ATTEMPTS``). None
    when that does not work out: the caller takes the careful path.

    Expired assignments are not expired first: they keep their slots until the careful path or the
    periodic command expires them, so a stale one never makes an item look free."""
    handler = get_task_type(round.task_type)
    for _attempt in range(QUICK_CLAIM_ATTEMPTS):
        try:
            with transaction.atomic():
                item = _first_free_item.first(handler.key, round_id=round.pk, worker_id=worker.pk,
                                              needed=round.workers_per_item)
                if item is None or not item_fits(item=item, handler=handler):
                    return None
                item.round = round
                assignment = _new_assignment(round=round, item=item, worker=worker, now=now, rng=rng,
                                             handler=handler, provider_assignment_id=provider_assignment_id,
                                             provider_task_id=provider_task_id, hold_seconds=hold_seconds,
                                             in_preview=in_preview)
                if not _insert_if_slot_free(assignment, needed=round.workers_per_item):
                    raise _NotClaimed
                return assignment
        except _NotClaimed:
            continue  # another request filled the item's last slot first: the next free item, once more
        except IntegrityError:
            return None  # a concurrent request of the same worker took a task first
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


# The quick claim of every "next task": compiled once per task type's joins (``djangokit.prepared``).
_first_free_item = PreparedQuery(_build_first_free_item)


# The slots an item holds, and its counted judgments: read by every claim and every submission.
_slots_held = PreparedQuery(
    lambda _shape, item_id: Assignment.objects.holding_a_slot().filter(item_id=item_id).order_by().values("pk"))


def _insert_if_slot_free(assignment: Assignment, *, needed: int) -> bool:
    """INSERT the assignment if its item holds fewer than ``needed`` slots and none of its worker's, in
    one statement (a fresh snapshot under READ COMMITTED); whether it was inserted.

    Built on the ORM's insert compiler (``prepare_value``, ``pre_save_val``, ``field_as_sql``): on a
    Django version it was not checked against it inserts nothing, and the caller takes the careful path.
    The statement is compiled once per database; each call only prepares its values, as the compiler
    would (``pre_save`` then ``get_db_prep_save`` of each field)."""
    if not compiler_internals_supported():
        return False
    from django.db import connection

    fields, sql = _conditional_insert(connection)
    values = [field.pre_save(assignment, True) for field in fields]
    if any(hasattr(value, "resolve_expression") for value in values):
        return False  # an expression as a value: compiled differently, so the careful path
    values = [field.get_db_prep_save(value, connection=connection) for field, value in zip(fields, values)]
    _held_sql, held_params = _slots_held.sql(item_id=assignment.item_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, *held_params, needed, assignment.item_id, assignment.worker_id])
        row = cursor.fetchone()
    if row is None:
        return False
    assignment.pk = row[0]
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return True


_conditional_inserts: dict[str, tuple[list, str]] = {}


def _conditional_insert(connection) -> tuple[list, str]:
    """The fields and SQL of ``_insert_if_slot_free`` on this connection's database, compiled on first use."""
    compiled = _conditional_inserts.get(connection.vendor)
    if compiled is not None:
        return compiled
    from django.db.models.sql import InsertQuery

    fields = [field for field in Assignment._meta.concrete_fields if not field.primary_key]
    compiler = InsertQuery(Assignment).get_compiler(connection=connection)
    # Each field's placeholder as the insert compiler writes it for a plain (non-expression) value.
    placeholders = [compiler.field_as_sql(field, getattr(field, "get_placeholder", None), None)[0] for field in fields]
    held_sql, _held_params = _slots_held.sql(item_id=0)
    quote = connection.ops.quote_name
    table = quote(Assignment._meta.db_table)
    sql = (
        f"INSERT INTO {table} ({', '.join(quote(field.column) for field in fields)}) "
        f"SELECT {', '.join(placeholders)} "
        f"WHERE (SELECT COUNT(*) FROM ({held_sql}) held) < %s "
        f"AND NOT EXISTS (SELECT 1 FROM {table} WHERE {quote('item_id')} = %s AND {quote('worker_id')} = %s) "
        f"RETURNING {quote('id')}"
    )
    return _conditional_inserts.setdefault(connection.vendor, (fields, sql))


def _request_assignment_locked(
    *, round, worker, now, rng, provider_assignment_id, provider_task_id, only_item, budget_allows,
    hold_seconds=None, hold_limit=None, in_preview=False,
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
        round=round, worker=worker, now=now, rng=rng, hold_seconds=hold_seconds, in_preview=in_preview,
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


def task_view(*, assignment: Assignment) -> dict:
    """The task as its page and the API show it. An item that does not fit its task type (written
    straight to the database, say) gives its assignment back and is refused with ``BrokenItem``,
    so the worker gets the next task on reload instead of the same failure."""
    handler = get_task_type(assignment.round.task_type)
    try:
        handler.check_item(assignment.item)
        return handler.context(assignment)
    except BROKEN_ITEM_ERRORS:
        logger.exception("assignment %s: item %s cannot be shown; giving it back", assignment.pk, assignment.item_id)
    with transaction.atomic():
        move_all(Assignment.objects.filter(pk=assignment.pk), ASSIGNMENT_STATUS, "give_back")
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
    except BROKEN_ITEM_ERRORS:
        logger.exception("item %s of round %s cannot be shown", item.pk, round.pk)
    raise BrokenItem(_("This task cannot be shown: its item no longer fits the task type."))
