"""Reads of crowd work: what a worker may do, round progress and spend, and judgments for evaluation."""
from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass
from decimal import Decimal

import pandas as pd
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.money import MoneySum
from kernel.money import quantize_money
from projects.selectors import projects_for_user

from . import hooks
from .models import Assignment, CollectionRound, Qualification, Worker, WorkItem
from .eligibility import (check_worker_may_work, check_worker_meets_rules, failed_checks, item_count,
                          judgments_needed, qualifying_result, worker_facts)
from .errors import BROKEN_ITEM_ERRORS, CrowdWorkError
from .task_types import get_task_type, task_types_yielding

logger = logging.getLogger(__name__)

# Fewer counted task times than this say nothing about how long a task takes (a researcher's few
# test submissions of two seconds each): the work list then uses the researcher's estimate or the time
# limit, and the cockpit shows no effective wage.
MIN_TIMED_TASKS = 5

BATTLE_COLUMNS = [
    "round_id", "item_id", "assignment_id", "instance_id", "category", "model_a", "model_b",
    "winner", "worker_id", "left", "is_gold", "submitted_at", "duration_seconds",
]
RANKING_COLUMNS = [
    "item_id", "annotator_id", "review_id", "rank", "prompt_rank", "language", "category",
    "round_id", "work_item_id", "assignment_id",
]
VERIFICATION_COLUMNS = [
    "round_id", "item_id", "assignment_id", "instance_id", "candidate_model", "outcome", "harmful",
    "worker_id", "is_gold", "submitted_at", "duration_seconds",
]


def _judgments(*, task_type: str, round: CollectionRound | None, project=None, include_gold: bool = False):
    """Assignments that count as data: submitted, not rejected, confirmed by the provider, and (unless
    ``include_gold``, for scoring workers) not on a gold / attention item: gold never enters
    evaluation data."""
    assignments = Assignment.objects.counted().filter(round__task_type=task_type)
    if not include_gold:
        assignments = assignments.filter(item__is_gold=False)
    if round is not None:
        assignments = assignments.filter(round=round)
    if project is not None:
        assignments = assignments.filter(round__project=project)
    return assignments.order_by("submitted_at", "id")


def _rows(*, kind: str, round: CollectionRound | None, project=None, include_gold: bool = False) -> list[dict]:
    """The rows every task type that yields ``kind`` contributes, type by type in submission order."""
    rows = []
    for handler in task_types_yielding(kind):
        judgments = _judgments(task_type=handler.key, round=round, project=project, include_gold=include_gold)
        rows.extend(handler.judgment_table(judgments))
    return rows


def pairwise_battles(round: CollectionRound | None = None, *, project=None,
                     include_gold: bool = False) -> pd.DataFrame:
    """One row per human pairwise judgment, in submission order (online Elo uses this order).

    Judgments on gold items are left out unless ``include_gold`` (worker quality scores them).

    ``winner`` is "model_a" or "model_b" (forced choice: humans never tie); ``category`` is the
    instance's instruction family; ``left`` says which side was shown on the left.
    """
    return pd.DataFrame(_rows(kind="battles", round=round, project=project, include_gold=include_gold),
                        columns=BATTLE_COLUMNS)


def ranking_judgments(round: CollectionRound | None = None, *, project=None,
                      include_gold: bool = False) -> pd.DataFrame:
    """Long format: one row per (review set, annotator, review) with rank 1 = best; gold items are
    left out unless ``include_gold``.

    ``item_id`` is the review set (the IRR item), so items ranked in several rounds pool together.
    ``project`` keeps the judgments of that project's rounds only (both filters may be given).
    """
    return pd.DataFrame(_rows(kind="rankings", round=round, project=project, include_gold=include_gold),
                        columns=RANKING_COLUMNS)


def verification_judgments(round: CollectionRound | None = None, *, project=None,
                           include_gold: bool = False) -> pd.DataFrame:
    """One row per verdict on a reference candidate, in submission order; gold items are left out
    unless ``include_gold``. ``outcome`` is the worker's judgment, ``harmful`` their harm flag."""
    return pd.DataFrame(_rows(kind="verifications", round=round, project=project, include_gold=include_gold),
                        columns=VERIFICATION_COLUMNS)


def worker_progress(*, round: CollectionRound, worker: Worker) -> dict:
    """"n of m done" for a worker: m is what the round can still give them plus what they did."""
    facts = worker_facts(round=round, worker=worker)
    if facts is not None:  # read with the round in this request ("next task")
        done, items = facts.done, facts.items
    else:
        counts = CollectionRound.objects.filter(pk=round.pk).values(
            done=_count_subquery(Assignment.objects.submitted().filter(round=round, worker=worker), group_by="round"),
            item_count=item_count(round_ref="pk"),
        ).get()
        done, items = counts["done"], counts["item_count"]
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    total = min(items, limit) if limit is not None else items
    return {"done": done, "total": total}


def tasks_held_by_others(*, round: CollectionRound, worker: Worker) -> int:
    """Items of the round the worker has not done whose every slot is held right now by another
    worker's open task: the worker may get one once a hold runs out or is given back."""
    now = timezone.now()
    live = Assignment.objects.filter(status=Assignment.Status.ASSIGNED, expires_at__gt=now)
    mine = Assignment.objects.filter(worker=worker, round=round).without_lapsed_looks(now).values("item")
    return (WorkItem.objects.filter(round=round, completed_at__isnull=True)
            .exclude(pk__in=mine)
            .annotate(live=_count_subquery(live.filter(item=OuterRef("pk")), group_by="item"))
            .filter(live__gt=0)
            .count())


def _count_subquery(queryset, *, group_by: str):
    counted = queryset.order_by().values(group_by).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


@dataclass
class WorkOffer:
    """One round on a worker's work list: what it pays and how long a task takes."""

    round: CollectionRound
    done: int
    total: int
    tasks_left: int
    expected_seconds: float
    # "median" (of the submitted task times, from MIN_TIMED_TASKS on), "estimate" (the researcher's)
    # or "time_limit".
    expected_seconds_source: str
    hourly_rate: Decimal | None

    @property
    def expected_minutes(self) -> float:
        return round(self.expected_seconds / 60, 1)


def settled_items_of_any_type() -> Q:
    """Items that another item has settled (``TaskType.settled_items`` of each registered type, on
    the items of its rounds): the engine hands out no task on them. Matches nothing when no type has any."""
    from .task_types import REGISTRY

    settled = Q(pk__in=[])
    for key, handler in REGISTRY.items():
        condition = handler.settled_items()
        if condition is not None:
            settled |= Q(round__task_type=key) & condition
    return settled


def work_list_for_worker(*, worker: Worker) -> list[WorkOffer]:
    """The open rounds the worker can still do, newest first: qualified (provider, language, approved
    tasks; not blocked), with a task left for them (an open one, or an item they have not done with a
    free slot, within the per-worker limit) and budget for one more task.

    A fixed number of queries, however many rounds are open.
    """

    if worker.is_blocked:
        return []
    now = timezone.now()
    # Assignments past their time limit are expired on the next request: they hold no slot here either.
    holding = Assignment.objects.holding_a_slot_at(now)
    # A look at a task that ran out before the worker started it is no claim on the item (it is
    # removed on the next request, ``expire_stale_assignments``).
    worker_items = Assignment.objects.filter(worker=worker).without_lapsed_looks(now).values("item")
    free_items = (
        WorkItem.objects.filter(round=OuterRef("pk"), completed_at__isnull=True)
        .exclude(settled_items_of_any_type())
        .exclude(pk__in=worker_items)
        .annotate(taken=_count_subquery(holding.filter(item=OuterRef("pk")), group_by="item"))
        .filter(taken__lt=OuterRef("workers_per_item"))
    )
    rounds = list(
        CollectionRound.objects.filter(status=CollectionRound.Status.OPEN)
        .annotate(
            item_count=item_count(round_ref="pk"),
            free_items=_count_subquery(free_items, group_by="round"),
            committed=_count_subquery(holding.filter(round=OuterRef("pk")), group_by="round"),
            worker_holding=_count_subquery(holding.filter(round=OuterRef("pk"), worker=worker), group_by="round"),
            worker_done=_count_subquery(
                Assignment.objects.submitted().filter(round=OuterRef("pk"), worker=worker), group_by="round"),
            has_open=Exists(Assignment.objects.filter(
                round=OuterRef("pk"), worker=worker, status=Assignment.Status.ASSIGNED, expires_at__gt=now)),
            worker_failed_checks=_count_subquery(
                Assignment.objects.confirmed().filter(round=OuterRef("pk"), worker=worker, gold_passed=False),
                group_by="round"),
            worker_qualified=Exists(Qualification.objects.filter(project=OuterRef("project"), worker=worker)),
        )
        .order_by("-opened_at", "-id")
    )
    approved = Assignment.objects.filter(worker=worker, review_status=Assignment.ReviewStatus.APPROVED).count()
    durations: dict[int, list[float]] = {}
    for round_id, seconds in (
        Assignment.objects.counted().filter(round__in=[r.pk for r in rounds], duration_seconds__isnull=False)
        .values_list("round_id", "duration_seconds")
    ):
        durations.setdefault(round_id, []).append(seconds)
    offers = []
    for round in rounds:
        try:
            check_worker_may_work(round=round, worker=worker, approved_tasks=approved,
                                  failed_checks_count=round.worker_failed_checks, qualified=round.worker_qualified)
        except CrowdWorkError:
            continue
        rules = round.qualification_rules or {}
        left = round.free_items
        if "max_tasks_per_worker" in rules:
            left = min(left, max(rules["max_tasks_per_worker"] - round.worker_holding, 0))
        if round.budget_cap is not None:
            affordable = (
                int((round.budget_cap - round.committed * round.reward_per_task) // round.reward_per_task)
                if round.reward_per_task > 0 else left
            )
            left = min(left, max(affordable, 0))
        if round.has_open:
            left += 1
        if left <= 0:
            continue
        offers.append(_offer(round=round, durations=durations.get(round.pk, []), tasks_left=left))
    return offers


def _offer(*, round: CollectionRound, durations: list[float], tasks_left: int) -> WorkOffer:
    if len(durations) >= MIN_TIMED_TASKS:
        seconds, source = float(statistics.median(durations)), "median"
    elif round.estimated_seconds_per_task:
        seconds, source = float(round.estimated_seconds_per_task), "estimate"
    else:
        seconds, source = float(round.time_limit_seconds), "time_limit"
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    total = min(round.item_count, limit) if limit is not None else round.item_count
    rate = (quantize_money(round.reward_per_task * Decimal(3600) / Decimal(str(seconds)), round.currency)
            if seconds else None)
    return WorkOffer(round=round, done=round.worker_done, total=total, tasks_left=tasks_left,
                     expected_seconds=seconds, expected_seconds_source=source, hourly_rate=rate)


def quality_warning(*, round: CollectionRound, worker: Worker) -> str:
    """The round's warning to a worker who failed as many check questions as its policy allows
    before warning (empty otherwise)."""

    policy = round.quality_policy
    warn_after, stop_after = policy["warn_after_failed_checks"], policy["stop_after_failed_checks"]
    facts = worker_facts(round=round, worker=worker)
    if not warn_after:
        failed = 0
    else:
        failed = facts.failed_checks if facts is not None else failed_checks(round=round, worker=worker)
    if not warn_after or failed < warn_after:
        return ""
    if stop_after:
        return _("%(failed)d of your answers to check questions were wrong. Please read each task carefully: "
                 "after %(stop)d wrong answers this round gives you no more tasks.") % {
            "failed": failed, "stop": stop_after}
    return _("%(failed)d of your answers to check questions were wrong. Please read each task carefully.") % {
        "failed": failed}


def approval_split(*, round: CollectionRound, assignments):
    """(approvable, held): the round's approval policy applied to submitted assignments. With a minimum
    gold accuracy, only workers whose gold answers in the round reach it are approved automatically;
    the others' work (and that of workers with no gold answer) waits for a researcher's review."""
    minimum = round.quality_policy["min_gold_accuracy_for_approval"]
    if minimum is None:
        return assignments, assignments.none()
    gold = (Assignment.objects.confirmed().filter(round=round, gold_passed__isnull=False)
            .exclude(review_status=Assignment.ReviewStatus.REJECTED)
            .values("worker").annotate(answers=Count("pk"), passed=Count("pk", filter=Q(gold_passed=True))))
    good = [row["worker"] for row in gold if row["passed"] >= minimum * row["answers"]]
    return assignments.filter(worker__in=good), assignments.exclude(worker__in=good)


def seconds_left(assignment: Assignment) -> int:
    return max(int((assignment.expires_at - timezone.now()).total_seconds()), 0)


def open_assignment(*, round: CollectionRound, worker: Worker) -> Assignment | None:
    return Assignment.objects.filter(round=round, worker=worker, status=Assignment.Status.ASSIGNED).first()


def round_progress(*, round: CollectionRound) -> dict:
    """Items done, assignments by status, spend so far and the effective hourly wage: the reward over
    the median of the ``timed_tasks`` counted task times, None below ``MIN_TIMED_TASKS`` of them."""
    items = round.items.aggregate(total=Count("pk"), completed=Count("pk", filter=Q(completed_at__isnull=False)))
    by_status = dict(
        round.assignments.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    # Only confirmed work is paid or timed: forged or unconfirmed provider work is neither.
    counted = Assignment.objects.counted().filter(round=round)
    paid = counted.count()
    durations = list(counted.filter(duration_seconds__isnull=False).values_list("duration_seconds", flat=True))
    median_seconds = statistics.median(durations) if durations else None
    effective_wage = (
        quantize_money(round.reward_per_task * Decimal(3600) / Decimal(str(median_seconds)), round.currency)
        if median_seconds and len(durations) >= MIN_TIMED_TASKS
        else None
    )
    return {
        "items": items["total"],
        "items_completed": items["completed"],
        "assignments": by_status,
        "judgments_counted": paid,
        "spent": round.reward_per_task * paid,
        "budget_cap": round.budget_cap,
        "median_seconds": median_seconds,
        "timed_tasks": len(durations),
        "effective_hourly_wage": effective_wage,
        "target_hourly_wage": round.target_hourly_wage,
    }


def slots_still_needed(*, round: CollectionRound) -> dict[int, int]:
    """The work the round still needs, as publishing offers it: for each item not yet complete, how
    many more judgments it may take (``workers_per_item`` less its counted judgments). Complete items
    need none and are left out, so a finished round needs nothing."""
    rows = (
        round.items.filter(completed_at__isnull=True)
        .annotate(judgments=_count_subquery(Assignment.objects.counted().filter(item=OuterRef("pk")),
                                            group_by="item"))
        .order_by("position").values_list("pk", "judgments")
    )
    needed = {item_id: round.workers_per_item - judgments for item_id, judgments in rows}
    return {item_id: slots for item_id, slots in needed.items() if slots > 0}


def eligible_workers(*, round: CollectionRound) -> list[Worker]:
    """The workers the platform knows whom the round's rules let take its tasks
    (``eligibility.check_worker_meets_rules``, whatever the round's status), and who have not reached
    its per-worker limit. Workers a provider has not sent yet are not among them."""

    in_round = Assignment.objects.filter(round=round, worker=OuterRef("pk"))
    workers = (
        Worker.objects.filter(is_blocked=False)
        .annotate(
            approved=_count_subquery(Assignment.objects.filter(
                worker=OuterRef("pk"), review_status=Assignment.ReviewStatus.APPROVED), group_by="worker"),
            failed=_count_subquery(in_round.confirmed().filter(gold_passed=False), group_by="worker"),
            holding=_count_subquery(in_round.holding_a_slot(), group_by="worker"),
            qualified=Exists(Qualification.objects.filter(worker=OuterRef("pk"), project_id=round.project_id)),
        )
        .order_by("pk")
    )
    limit = (round.qualification_rules or {}).get("max_tasks_per_worker")
    eligible = []
    for worker in workers:
        if limit is not None and worker.holding >= limit:
            continue
        try:
            check_worker_meets_rules(round=round, worker=worker, approved_tasks=worker.approved,
                                     failed_checks_count=worker.failed, qualified=worker.qualified)
        except CrowdWorkError:
            continue
        eligible.append(worker)
    return eligible


def items_without_eligible_worker(*, round: CollectionRound) -> list[WorkItem]:
    """Items that still wait for a worker (not complete, fewer slots held than they need) for which no
    eligible worker (``eligible_workers``) remains: every one of them already had the item (did it,
    gave it back, was rejected on it). Only a change unblocks them: more workers or time, wider
    eligibility, or closing the round. In position order."""

    waiting = list(
        round.items.filter(completed_at__isnull=True)
        .annotate(held=_count_subquery(Assignment.objects.holding_a_slot().filter(item=OuterRef("pk")),
                                       group_by="item"))
        .filter(held__lt=round.workers_per_item).order_by("position")
    )
    if not waiting:
        return []
    eligible = {worker.pk for worker in eligible_workers(round=round)}
    had: dict[int, set[int]] = {}
    for item_id, worker_id in Assignment.objects.filter(item__in=waiting).values_list("item_id", "worker_id"):
        had.setdefault(item_id, set()).add(worker_id)
    stuck = []
    for item in waiting:
        if eligible - had.get(item.pk, set()):
            continue
        item.round = round
        if item.held < judgments_needed(item=item):
            stuck.append(item)
    return stuck


def submission_review(*, assignment: Assignment) -> dict:
    """A submission as its task type shows it to a reviewer: ``{"template", "review"}``, or
    ``{"error"}`` when its stored item no longer fits the type (written past the checks, say)."""
    handler = get_task_type(assignment.round.task_type)
    try:
        return {"template": handler.review_template_name, "review": handler.review_context(assignment)}
    except BROKEN_ITEM_ERRORS:
        logger.exception("assignment %s: its submission cannot be shown for review", assignment.pk)
        return {"error": "This submission's item no longer fits its task type; it cannot be shown."}


def qualifying_feedback(*, round: CollectionRound, worker: Worker) -> dict | None:
    """In a qualifying round: what the worker is told about their last answer and, once every item
    is answered, whether they qualified; None in other rounds or before the first answer."""

    result = qualifying_result(round=round, worker=worker)
    if result is None or not result["answers"]:
        return None
    last = (Assignment.objects.confirmed().filter(round=round, worker=worker, gold_passed__isnull=False)
            .select_related("item", "round").order_by("-submitted_at", "-pk").first())
    outcome = ""
    if result["finished"]:
        outcome = (_("You passed the qualification (%(passed)d of %(answers)d right): this project's other "
                     "rounds are open to you.") if result["qualified"] else
                   _("You did not pass the qualification (%(passed)d of %(answers)d right).")) % result
    return {"last": round.task_type_handler.gold_feedback(last), "passed": bool(last.gold_passed),
            "outcome": outcome, **result}


PENDING_REVIEW = "pending"


@dataclass
class WorkRecord:
    """One submitted task as its worker sees it on "My work"."""

    assignment: Assignment
    review: str  # "pending", "approved" or "rejected"
    feedback: str
    earned: Decimal  # the reward once approved, else 0
    bonuses: Decimal  # bonuses paid for this task
    currency: str
    is_new: bool  # feedback given since the worker last opened "My work"


def _review_of(assignment: Assignment) -> str:
    if assignment.review_status in (Assignment.ReviewStatus.APPROVED, Assignment.ReviewStatus.REJECTED):
        return assignment.review_status
    return PENDING_REVIEW


def work_history(*, worker: Worker):
    """The worker's submitted tasks, newest first (a queryset to page through)."""
    return (Assignment.objects.submitted().filter(worker=worker).select_related("round")
            .order_by("-submitted_at", "-pk"))


def work_records(assignments, *, seen_before=None) -> list[WorkRecord]:
    """One page of ``work_history`` as records: review, feedback and what each task earned; feedback
    given after ``seen_before`` (the worker's last look, None for never) is new."""
    assignments = list(assignments)
    bonuses: dict[int, Decimal] = {}
    for assignment_id, amount in hooks.paid_bonuses(assignments).values_list("assignment_id", "amount"):
        bonuses[assignment_id] = bonuses.get(assignment_id, Decimal("0")) + amount
    records = []
    for assignment in assignments:
        review = _review_of(assignment)
        earned = assignment.round.reward_per_task if review == Assignment.ReviewStatus.APPROVED else Decimal("0")
        records.append(WorkRecord(assignment=assignment, review=review, feedback=assignment.review_feedback,
                                  earned=earned, bonuses=bonuses.get(assignment.pk, Decimal("0")),
                                  currency=assignment.round.currency,
                                  is_new=bool(assignment.review_feedback) and assignment.reviewed_at is not None
                                  and (seen_before is None or assignment.reviewed_at > seen_before)))
    return records


def earnings(*, worker: Worker) -> list[dict]:
    """What the worker has earned, per currency (sorted): approved tasks × their reward plus paid bonuses."""
    totals: dict[str, dict] = {}

    def entry(currency):
        return totals.setdefault(currency, {"currency": currency, "approved_tasks": 0, "rewards": Decimal("0"),
                                            "bonuses": Decimal("0")})

    approved = (Assignment.objects.submitted().filter(worker=worker, review_status=Assignment.ReviewStatus.APPROVED)
                .values("round__currency").annotate(n=Count("pk"), rewards=MoneySum("round__reward_per_task")))
    for row in approved:
        item = entry(row["round__currency"])
        item["approved_tasks"] += row["n"]
        item["rewards"] += row["rewards"]
    for row in (hooks.paid_bonuses(Assignment.objects.filter(worker=worker)).values("currency")
                .annotate(total=MoneySum("amount"))):
        entry(row["currency"])["bonuses"] += row["total"]
    return [{**item, "total": item["rewards"] + item["bonuses"]} for _, item in sorted(totals.items())]


def new_feedback_count(*, worker: Worker) -> int:
    """Reviews with feedback given to the worker since they last opened "My work"."""
    reviewed = Assignment.objects.submitted().filter(worker=worker, reviewed_at__isnull=False).exclude(
        review_feedback="")
    if worker.work_history_seen_at is not None:
        reviewed = reviewed.filter(reviewed_at__gt=worker.work_history_seen_at)
    return reviewed.count()


def rounds_for_user(user):
    return CollectionRound.objects.filter(project__in=projects_for_user(user))


def work_items_for_user(user) -> QuerySet[WorkItem]:
    return WorkItem.objects.filter(round__project__in=projects_for_user(user))


def assignments_for_user(user) -> QuerySet[Assignment]:
    return Assignment.objects.filter(round__project__in=projects_for_user(user))


# --- one row's history in the crowd work (the cockpit's data browser) -----------------------------

HISTORY_ITEMS = 200


def _target_conditions(row) -> Q:
    """Work items whose target is ``row``, or (for a row others point at, e.g. an instance) a target
    that belongs to it (its reference candidates, outputs, reference), found from the item's columns."""
    condition = Q(pk__in=[])
    for field in WorkItem._meta.get_fields():
        if not (field.many_to_one and field.name != "round"):
            continue
        related = field.related_model
        if isinstance(row, related):
            condition |= Q(**{field.name: row})
            continue
        for inner in related._meta.get_fields():
            if inner.many_to_one and isinstance(row, inner.related_model) and inner.name == type(row)._meta.model_name:
                condition |= Q(**{f"{field.name}__{inner.name}": row})
    return condition


def item_history(row, *, project) -> list[dict]:
    """The rounds of ``project`` whose work items are about ``row`` (a family, instance, review set or
    model output), newest first, each item with its submitted judgments (worker, dates, review status,
    answers in the type's own terms; a ranking as the reviews' places in their set)."""
    items = (WorkItem.objects.filter(_target_conditions(row), round__project=project)
             .select_related("round").order_by("-round__created_at", "-round_id", "position")[:HISTORY_ITEMS])
    items = list(items)
    by_item = {item.pk: item for item in items}
    judgments: dict[int, list[Assignment]] = {}
    for assignment in (Assignment.objects.submitted().filter(item__in=list(by_item))
                       .select_related("worker__user", "round").order_by("submitted_at", "pk")):
        assignment.item = by_item[assignment.item_id]
        judgments.setdefault(assignment.item_id, []).append(assignment)
    shown = _history_answers([assignment for group in judgments.values() for assignment in group])
    return [{"item": item, "round": item.round,
             "judgments": [{"assignment": assignment, "answers": shown.get(assignment.pk)}
                           for assignment in judgments.get(item.pk, [])]}
            for item in items]


def _history_answers(assignments: list[Assignment]) -> dict[int, dict]:
    """Each judgment's answers in its task type's words for a history (``TaskType.history_answers``);
    one that cannot be read (an item written past the checks) is left out, the rest still shown."""
    by_type: dict[str, list[Assignment]] = {}
    for assignment in assignments:
        by_type.setdefault(assignment.round.task_type, []).append(assignment)
    shown: dict[int, dict] = {}
    for key, group in by_type.items():
        handler = get_task_type(key)
        try:
            shown.update(handler.history_answers(group))
        except BROKEN_ITEM_ERRORS:
            for assignment in group:
                try:
                    shown.update(handler.history_answers([assignment]))
                except BROKEN_ITEM_ERRORS:
                    continue
    return shown
