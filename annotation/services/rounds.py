"""Writes of rounds: creating one, adding items, and its lifecycle (open, pause, resume, extend, widen,
close, cancel; complete and reopen are the engine's own)."""
from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any, Callable, Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from djangokit.prepared import PreparedQuery
from djangokit.transitions import move

from .. import consent
from ..errors import InvalidTransition, message_of
from ..models import ROUND_STATUS, Assignment, CollectionRound, WorkItem, round_default
from ..task_types import get_task_type

logger = logging.getLogger(__name__)


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
        transition_round(round=round, action="reopen")  # the new items need work
    return items


# The engine's own round transitions (``ROUND_STATUS``): no button or API call makes them.
AUTOMATIC_ACTIONS = ("complete", "reopen")


# Statuses in which work may still be submitted and items still change (added, reopened, fed). A
# complete round takes work still in flight, and reopens when an item needs more.
ACTIVE_STATUSES = (CollectionRound.Status.OPEN, CollectionRound.Status.PAUSED, CollectionRound.Status.COMPLETE)

# Every field but the status, which only ``djangokit.transitions.move`` writes.
_SETTINGS_FIELDS = [field.name for field in CollectionRound._meta.concrete_fields
                    if not field.primary_key and field.name != ROUND_STATUS.field]


def allowed_actions(round: CollectionRound) -> list[str]:
    """The round transitions a researcher may make from the round's status, in ``ROUND_STATUS`` order
    (the engine's own, ``AUTOMATIC_ACTIONS``, are not among them)."""
    return [action for action in ROUND_STATUS.allowed_events(round.status) if action not in AUTOMATIC_ACTIONS]


def _has_open_items(round: CollectionRound) -> bool:
    return bool(_an_open_item.all(round_id=round.pk))


# Every item completion asks (``complete_round_if_last_item``): compiled once (``djangokit.prepared``).
_an_open_item = PreparedQuery(
    lambda _shape, round_id: WorkItem.objects.filter(round=round_id, completed_at__isnull=True)
    .order_by().values_list("pk", flat=True)[:1])


def check_transition(*, round: CollectionRound, action: str) -> None:
    """Refuse (``InvalidTransition``) a transition the round cannot make now; reads only, so a caller
    can check before its own writes and outside calls."""
    ROUND_STATUS.check(round.status, action, subject=round.pk)
    if action == "open" and not round.items.exists():
        raise InvalidTransition("a round needs at least one item before it opens")


def transition_round(*, round: CollectionRound, action: str, change: Callable[[CollectionRound], None] | None = None
                     ) -> CollectionRound:
    """Make ``action`` (an event of ``ROUND_STATUS``) on the locked round, with the settings ``change``
    makes; the status is written by a conditional update, the settings in the same transaction."""
    with transaction.atomic():
        locked = CollectionRound.objects.select_for_update().get(pk=round.pk)
        check_transition(round=locked, action=action)
        if action == "open":
            locked.opened_at = timezone.now()
        elif action in ("close", "cancel"):
            locked.closed_at = timezone.now()
        if change is not None:
            change(locked)
        if change is not None or action in ("open", "close", "cancel"):
            locked.full_clean()
            locked.save(update_fields=_SETTINGS_FIELDS)
        move(locked, ROUND_STATUS, action)
        if action == "resume" and locked.items.exists() and not _has_open_items(locked):
            # Its last items completed while it was paused: resumed, it is complete.
            move(locked, ROUND_STATUS, "complete")
    return locked


def open_round(*, round: CollectionRound) -> CollectionRound:
    return transition_round(round=round, action="open")


def pause_round(*, round: CollectionRound) -> CollectionRound:
    """No new tasks are handed out until ``resume_round``; assignments in flight may still be submitted."""
    return transition_round(round=round, action="pause")


def resume_round(*, round: CollectionRound) -> CollectionRound:
    return transition_round(round=round, action="resume")


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
        return transition_round(round=round, action="extend", change=change)
    except ValidationError as error:
        raise InvalidTransition(message_of(error)) from None


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

    return transition_round(round=round, action="widen", change=change)


# The settings a researcher sets on a draft (``edit_round``) and a clone copies (``clone_round``): the
# ``create_round`` arguments but the task type and the project, which a round keeps for life.
EDITABLE_SETTINGS = ("name", "language", "workers_per_item", "min_workers_per_item", "reward_per_task", "currency",
                     "target_hourly_wage", "time_limit_seconds", "qualification_rules", "budget_cap", "instructions",
                     "estimated_seconds_per_task", "consent_text")


def edit_round(*, round: CollectionRound, changes: dict,
               items: Callable[[CollectionRound], Any] | None = None) -> CollectionRound:
    """Change a draft round's settings (``changes``, names of ``EDITABLE_SETTINGS``) and, with
    ``items``, replace its items: the draft's items are removed and ``items(round)`` adds the new
    ones. Only a draft may be edited (the ``edit`` transition of ``ROUND_STATUS``: nobody has worked
    on it); the settings are checked as ``create_round`` checks them (``ValidationError``), and a
    refusal changes nothing."""
    unknown = sorted(set(changes) - set(EDITABLE_SETTINGS))
    if unknown:
        raise InvalidTransition(f"a round's {', '.join(unknown)} cannot be changed; "
                                f"what can: {', '.join(EDITABLE_SETTINGS)}")

    def change(locked: CollectionRound) -> None:
        for name, value in changes.items():
            if name == "consent_text":
                value = consent.clean_consent_text(value or "")
            elif name == "qualification_rules":
                value = value or {}
            setattr(locked, name, value)

    with transaction.atomic():
        locked = transition_round(round=round, action="edit", change=change)
        if items is not None:
            if Assignment.objects.filter(round=locked).exists():  # never for a draft; a guard all the same
                raise InvalidTransition("the round's items have work on them; they cannot be replaced")
            locked.items.all().delete()
            if locked.sampler_state:  # the replaced items' sampler; the new source may start its own
                locked.sampler_state = {}
                locked.save(update_fields=["sampler_state"])
            items(locked)
    return locked


def clone_round(*, round: CollectionRound, created_by=None, name: str | None = None) -> CollectionRound:
    """A new draft of the same project with ``round``'s settings and items (their targets and gold
    answers, in order): a round of any status can be run again or fixed before it opens. Only what
    the researcher set is copied: not the status, the work done, the publications, the follow-up
    link or an adaptive sampler's state. Checked as a new round is (``ValidationError``)."""
    settings = {field: getattr(round, field) for field in EDITABLE_SETTINGS}
    settings["name"] = name or round.name
    handler = get_task_type(round.task_type)
    with transaction.atomic():
        copy = create_round(task_type=round.task_type, project=round.project, created_by=created_by, **settings)
        items = list(round.items.select_related(*handler.target_fields).order_by("position"))
        if items:
            gold = {index: item.gold_answer for index, item in enumerate(items) if item.is_gold}
            add_items(round=copy, targets=[handler.target_of(item) for item in items], gold_answers=gold)
    return copy


def close_round(*, round: CollectionRound) -> CollectionRound:
    return transition_round(round=round, action="close")


def cancel_round(*, round: CollectionRound) -> CollectionRound:
    return transition_round(round=round, action="cancel")


def complete_round_if_last_item(*, round: CollectionRound) -> None:
    """In the transaction that completed an item of ``round`` (the object in hand): the round becomes
    complete if that was its last open item (``transition_round`` "complete"), and the object in hand
    then says so.

    Two items completing at once in separate transactions must not each see the other still open
    and leave the round open for ever: each completer holds the round row while it counts the open
    items (a statement after the lock, so it sees every completion committed before). The lock is
    asked for without waiting (an item lock is held here, and a budget-capped request holds the
    round while it waits for items), skipping the row when another transaction holds it (no error,
    so no savepoint around it): the check then runs again as soon as this transaction commits, when
    it holds no lock and sees its own completion."""
    round_id = round.pk
    locked = _round_to_complete.first(round_id=round_id)
    if locked is None:
        transaction.on_commit(lambda: complete_round_if_done(round_id=round_id))
        return
    if locked.status == CollectionRound.Status.OPEN and not _has_open_items(locked):
        round.status = transition_round(round=locked, action="complete").status
        logger.info("round %s complete: every item has its judgments", round_id)


# The look ``complete_round_if_done`` takes first (skipping the items other transactions hold).
_an_open_item_no_one_holds = PreparedQuery(
    lambda _shape, round_id: WorkItem.objects.select_for_update(skip_locked=True, no_key=True)
    .filter(round=round_id, completed_at__isnull=True).order_by().values_list("pk", flat=True)[:1])

# Every item completion asks for it: compiled once (``djangokit.prepared``).
_round_to_complete = PreparedQuery(
    lambda _shape, round_id: CollectionRound.objects.select_for_update(skip_locked=True, no_key=True)
    .only("pk", "status").order_by().filter(pk=round_id)[:1])


def complete_round_if_done(*, round_id: int) -> CollectionRound | None:
    """Make the open round complete if none of its items needs more work; called once an item's
    completion has committed (``complete_round_if_last_item`` found the round held). Returns the
    round when it became complete.

    First a look without waiting: an open item no other transaction holds is not being completed
    now, so whoever completes it later checks the round then, and sees every completion committed
    before (this caller's included). Only when every open item is held (or none is left) does the
    check wait for the round row; near a round's end, that is."""
    with transaction.atomic():
        if _an_open_item_no_one_holds.all(round_id=round_id):
            return None
        round = CollectionRound.objects.select_for_update(no_key=True).order_by().filter(pk=round_id).first()
        if round is None or round.status != CollectionRound.Status.OPEN or not round.items.exists():
            return None
        if _has_open_items(round):
            return None
        return transition_round(round=round, action="complete")


def overlap_savings(*, round: CollectionRound) -> dict:
    """What adaptive overlap saved: judgments on completed items against ``workers_per_item`` each."""
    completed = round.items.filter(completed_at__isnull=False)
    judgments = Assignment.objects.counted().filter(item__in=completed).count()
    fixed = completed.count() * round.workers_per_item
    return {"items_completed": completed.count(), "judgments": judgments, "fixed_judgments": fixed,
            "saved": fixed - judgments, "saved_share": (fixed - judgments) / fixed if fixed else 0.0}
