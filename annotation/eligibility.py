"""Who may take a round's tasks, and how many judgments an item needs: the one definition of both.

Reads only. The engine (``services.engine``) refuses with these rules and the worker pages'
selectors show them, so both import them from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from djangokit.prepared import PreparedQuery

from .errors import NotQualified, RoundNotOpen
from .models import Assignment, CollectionRound, ConsentDecision, Qualification, Worker, WorkItem
from .task_types import get_task_type


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
    row.worker_facts = facts_from_row(row, worker_id=worker.pk)
    return row


def worker_facts_columns(*, round_ref: str, project_ref: str, worker_id: int) -> dict:
    """The annotations ``read_round_for_worker`` reads with a round, for a query whose rows name the
    round (``round_ref``) and its project (``project_ref``): ``facts_from_row`` turns them into ``WorkerFacts``."""
    mine = Assignment.objects.filter(round=OuterRef(round_ref), worker=worker_id)
    return {
        "facts_failed_checks": _count_per_round(mine.confirmed().filter(gold_passed=False)),
        "facts_done": _count_per_round(mine.filter(status=Assignment.Status.SUBMITTED)),
        "facts_items": item_count(round_ref=round_ref),
        "facts_qualified": Exists(Qualification.objects.filter(worker=worker_id, project=OuterRef(project_ref))),
        "facts_consent": Subquery(ConsentDecision.objects.filter(round=OuterRef(round_ref), worker=worker_id,
                                                                 accepted=True).values("text_sha256")[:1]),
        "facts_open": Exists(mine.filter(status=Assignment.Status.ASSIGNED)),
    }


def item_count(*, round_ref: str):
    """The number of items of the round ``round_ref`` names, read in one index lookup: its last
    position plus one. ``services.rounds.add_items`` numbers a round's items 0, 1, 2, ... and items
    leave a round only all together, so positions have no gaps; counting the rows would read every
    item of the round on every "next task"."""
    last = WorkItem.objects.filter(round=OuterRef(round_ref)).order_by("-position").values("position")[:1]
    return Coalesce(Subquery(last, output_field=IntegerField()) + 1, Value(0))


def facts_from_row(row, *, worker_id: int) -> WorkerFacts:
    return WorkerFacts(
        worker_id=worker_id, failed_checks=row.facts_failed_checks, done=row.facts_done, items=row.facts_items,
        qualified=row.facts_qualified, consent_sha256=row.facts_consent, has_open_assignment=row.facts_open,
    )


def _build_round_with_worker_facts(_shape, round_id: int, worker_id: int):
    return (
        CollectionRound.objects.filter(pk=round_id)
        .annotate(**worker_facts_columns(round_ref="pk", project_ref="project_id", worker_id=worker_id))
        .order_by()[:1]
    )


# Every "next task" reads it: compiled once (``djangokit.prepared``).
_round_with_worker_facts = PreparedQuery(_build_round_with_worker_facts)


def worker_facts(*, round: CollectionRound, worker: Worker) -> WorkerFacts | None:
    """The facts read with this round object for this worker (``read_round_for_worker``), if any."""
    facts = getattr(round, "worker_facts", None)
    return facts if facts is not None and facts.worker_id == worker.pk else None


def _count_per_round(queryset):
    counted = queryset.order_by().values("round").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))
