"""VisIT-Bench stage transitions between crowd rounds and the LLM.

instruction generation → (new instance) → caption → (LLM reference candidate) → verification →
verified or discarded. The crowd steps' own effects and their completion hooks live in their task
types, which call the follow-up helpers here; this module routes generated candidates into
verification items and starts new rounds for discarded instances (re-caption, regenerate). Status
changes go through ``datasets_app.instance_status``.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import Case, When
from django.dispatch import Signal
from django.utils import timezone

from datasets_app import instance_status
from datasets_app.models import Instance, ReferenceCandidate
from kernel.errors import ServiceError
from datasets_app.reference_generation import (
    ReferenceReport,
    generate_references,
    instances_awaiting_reference,
)
from llm.client import configured_model
from llm.params import LLMRunParams
from kernel.wording import counted

from .errors import InvalidTransition
from .models import CollectionRound, WorkItem, round_default
from .services.rounds import ACTIVE_STATUSES, add_items, create_round, open_round
from .task_types import get_task_type, stage_task_type

logger = logging.getLogger(__name__)

# What a chained round takes from the round it follows: who may work on it (language, eligibility
# and quality rules, study information), what it pays and how long a task may take, and who made it.
# Not its budget cap (tasks cost differently), overlap, instructions or time estimate (the task
# type's own), nor the role of a qualifying round (``qualifies_for_project``: its items are gold).
INHERITED_SETTINGS = (
    "language", "reward_per_task", "currency", "target_hourly_wage", "time_limit_seconds", "consent_text",
    "created_by",
)
NOT_INHERITED_RULES = ("qualifies_for_project",)
# What a round that follows no round takes from the project's latest round (of its own task type if
# there is one): the pay, so that a round the pipeline opens by itself does not pay nothing where the
# researcher's rounds pay. Language, time limit and consent belong to a task type and its data.
PROJECT_PAY_SETTINGS = ("reward_per_task", "currency", "target_hourly_wage")
# Rounds that still take items: a complete one reopens for the items fed to it.
USABLE = (CollectionRound.Status.DRAFT, *ACTIVE_STATUSES)


# An instance awaits its LLM reference, for the verification round given (``instance_id``,
# ``verification_round_id``). A signal, so that the crowd work does not import the step runs above it.
reference_wanted = Signal()


# --- follow-up stages, called by the task types' completion hooks --------------------------------


def usable_follow_up(item: WorkItem) -> CollectionRound | None:
    """The follow-up round the item's round names, if it still takes items (a warning otherwise)."""
    round = item.round
    follow_up = round.follow_up_round
    if follow_up is None:
        return None
    if follow_up.status not in USABLE:
        logger.warning("round %s: follow-up round %s is %s; item %s not routed",
                       round.pk, follow_up.pk, follow_up.status, item.pk)
        return None
    return follow_up


def caption_new_instances(*, item: WorkItem, caption_round: CollectionRound) -> None:
    """The instances an instruction-generation item's submissions created become caption items."""
    results = (
        item.assignments.counted()
        .order_by("submitted_at", "id")
        .values_list("result", flat=True)
    )
    instance_ids = [result["instance_id"] for result in results if result and "instance_id" in result]
    already = set(WorkItem.objects.filter(round=caption_round, instance_id__in=instance_ids)
                  .values_list("instance_id", flat=True))
    instances = Instance.objects.filter(pk__in=[pk for pk in instance_ids if pk not in already]).order_by("pk")
    if not instances:
        return
    try:
        add_items(round=caption_round, targets=list(instances))
    except InvalidTransition as error:  # closed between the check and the lock
        logger.warning("round %s: follow-up round %s: %s", item.round_id, caption_round.pk, error)


def enqueue_reference_generation(instance_id: int, verification_round_id: int) -> None:
    """Called after the commit that left the instance awaiting its reference: the background step
    runs (which listen to ``reference_wanted``) generate it, within their budget and heartbeat."""
    reference_wanted.send(sender=Instance, instance_id=instance_id, verification_round_id=verification_round_id)


# --- verification items ------------------------------------------------------------------------


def captioning_type() -> str:
    """The task type that captions instances (its item source takes those awaiting a caption)."""
    return stage_task_type(Instance.Status.AWAITING_CAPTION).key


def verifying_type() -> str:
    """The task type that verifies reference candidates (its source takes instances awaiting verification)."""
    return stage_task_type(Instance.Status.AWAITING_VERIFICATION).key


def latest_caption_round(instance: Instance) -> CollectionRound | None:
    item = (
        WorkItem.objects.filter(instance=instance, round__task_type=captioning_type(), completed_at__isnull=False)
        .select_related("round__follow_up_round")
        .order_by("-completed_at", "-pk")
        .first()
    )
    return item.round if item else None


def create_follow_up_round(*, after: CollectionRound | None, task_type: str, project=None, name: str | None = None,
                           workers_per_item: int | None = None, **settings) -> CollectionRound:
    """A new round of ``task_type`` for the researcher: the one way the pipeline makes a round.

    It belongs to the project of ``after`` (the round it follows), or to ``project`` (the project of
    its targets) when it follows none or one of no project, and takes the settings of ``after``
    listed in ``INHERITED_SETTINGS`` and its qualification rules. Following none, it takes the pay of
    the project's latest round (``PROJECT_PAY_SETTINGS``), defaults otherwise. ``settings``
    (``services.rounds.create_round`` arguments) override them. A draft: the caller adds items and opens it.
    """
    inherited = {field: getattr(after, field) for field in INHERITED_SETTINGS} if after else {}
    if after is None and project is not None:
        latest = (CollectionRound.objects.filter(project=project).exclude(status=CollectionRound.Status.CANCELLED)
                  .order_by(Case(When(task_type=task_type, then=0), default=1), "-created_at", "-id").first())
        if latest is not None:
            inherited = {field: getattr(latest, field) for field in PROJECT_PAY_SETTINGS}
    if after is not None:
        inherited["qualification_rules"] = {
            rule: value for rule, value in (after.qualification_rules or {}).items() if rule not in NOT_INHERITED_RULES
        }
        if after.project_id is not None:
            project = after.project
    if workers_per_item is None:
        workers_per_item = get_task_type(task_type).default_workers_per_item
    stamp = timezone.now().strftime("%Y-%m-%d %H:%M")
    default_name = f"{task_type.replace('_', ' ').capitalize()} after {after.name}" if after else (
        f"{task_type.replace('_', ' ').capitalize()} {stamp}"
    )
    return create_round(
        name=name or default_name, task_type=task_type, workers_per_item=workers_per_item, project=project,
        **{**inherited, **{key: value for key, value in settings.items() if value is not None}},
    )


def project_of(instance: Instance):
    """The project an instance's data belongs to (through its family); None for data of none."""
    return instance.family.project


class RoundOfAnotherProject(ServiceError):
    """The verification round belongs to another project than these instances."""

    status_code = 409


def instances_for_verification_round(round: CollectionRound, instances: Iterable[Instance] | None) -> list[Instance]:
    """What a named verification round may receive: its own project's instances (all those awaiting a
    reference when none are named); a round never takes another project's work. A round of no project
    (made before rounds had one) takes what it is given, as it always did."""
    if round.project_id is None:
        return instances
    if instances is None:
        return [instance for instance in instances_awaiting_reference()
                if getattr(project_of(instance), "pk", None) == round.project_id]
    instances = list(instances)
    strays = [instance.pk for instance in instances if getattr(project_of(instance), "pk", None) != round.project_id]
    if strays:
        raise RoundOfAnotherProject(
            f"Round {round.pk} takes only its own project's instances; instance(s) {', '.join(map(str, strays[:10]))} "
            f"belong elsewhere.")
    return instances


@dataclass
class RoutingReport:
    items: dict[int, list[int]] = field(default_factory=dict)  # round id -> new item ids
    already_routed: int = 0
    opened_rounds: list[int] = field(default_factory=list)

    def summary(self) -> str:
        if not self.items:
            return f"no new verification items ({counted(self.already_routed, 'candidate')} already had one)"
        parts = [f"round {round_id}: {counted(len(ids), 'item')}" for round_id, ids in self.items.items()]
        return "verification items added: " + ", ".join(parts)


@transaction.atomic
def open_verification_items(
    *, candidates: Iterable[ReferenceCandidate], round: CollectionRound | None = None
) -> RoutingReport:
    """Add a verification item per candidate that has none yet.

    Into ``round`` when given; otherwise into the follow-up round of the caption round that
    produced the instance's captions, creating (and opening) a verification round with that
    round's settings and three workers per item when there is none or it no longer takes items.
    """
    report = RoutingReport()
    by_round: dict[int, tuple[CollectionRound, list[ReferenceCandidate]]] = {}
    # Per project: candidates of instances captioned outside the platform share one new round.
    without_caption_round: dict[int | None, CollectionRound] = {}
    new_rounds: list[CollectionRound] = []
    for candidate in candidates:
        if WorkItem.objects.filter(candidate=candidate).exists():
            report.already_routed += 1
            continue
        target = round
        if target is None:
            project = project_of(candidate.instance)
            caption_round = latest_caption_round(candidate.instance)
            if caption_round is not None and caption_round.project_id not in (None, getattr(project, "pk", None)):
                caption_round = None  # another project's round never receives this project's work
            if caption_round is None:
                key = getattr(project, "pk", None)
                if key not in without_caption_round:
                    without_caption_round[key] = create_follow_up_round(
                        after=None, task_type=verifying_type(), project=project)
                    new_rounds.append(without_caption_round[key])
                target = without_caption_round[key]
            else:
                caption_round.refresh_from_db(fields=["follow_up_round"])
                target = caption_round.follow_up_round
                if target is None or target.status not in USABLE:
                    target = create_follow_up_round(after=caption_round, task_type=verifying_type(), project=project)
                    new_rounds.append(target)
                    caption_round.follow_up_round = target
                    caption_round.full_clean()
                    caption_round.save(update_fields=["follow_up_round"])
        by_round.setdefault(target.pk, (target, []))[1].append(candidate)
    for round_id, (target, members) in by_round.items():
        items = add_items(round=target, targets=members)
        report.items[round_id] = [item.pk for item in items]
    for new_round in new_rounds:
        if new_round.pk in by_round:
            open_round(round=new_round)
            report.opened_rounds.append(new_round.pk)
    return report


# --- LLM step plus routing ---------------------------------------------------------------------


@dataclass
class PipelineReport:
    references: ReferenceReport
    routing: RoutingReport
    reset_instances: list[int] = field(default_factory=list)


def generate_and_route_references(
    *,
    instances: Iterable[Instance] | None = None,
    verification_round: CollectionRound | None = None,
    llm: LLMRunParams = LLMRunParams(),
) -> PipelineReport:
    """Generate reference candidates and open a verification item for each new one."""
    if verification_round is not None:
        instances = instances_for_verification_round(verification_round, instances)
    report = generate_references(instances=instances, llm=llm)
    candidates = ReferenceCandidate.objects.filter(pk__in=report.candidate_ids).select_related("instance__family")
    routing = open_verification_items(candidates=candidates, round=verification_round)
    return PipelineReport(references=report, routing=routing)


# --- discarded instances: a new round ----------------------------------------------------------


def discarded_instances(*, reasons: Iterable[str], instance_ids: Iterable[int] | None = None) -> list[Instance]:
    unknown = set(reasons) - set(Instance.DiscardReason.values) - {""}
    if unknown or not reasons:
        raise ValueError(
            f"unknown discard reason(s): {', '.join(sorted(unknown)) or '(none given)'}; "
            f"known: {', '.join(v for v in Instance.DiscardReason.values if v)}"
        )
    queryset = Instance.objects.filter(status=Instance.Status.DISCARDED, discard_reason__in=list(reasons))
    if instance_ids is not None:
        queryset = queryset.filter(pk__in=list(instance_ids))
    return list(queryset.select_related("family").order_by("pk"))


@dataclass
class RecaptionReport:
    round: CollectionRound | None
    instance_ids: list[int]

    def summary(self) -> str:
        if self.round is None:
            return "no discarded instances matched: no round created"
        return (f"caption round {self.round.pk} ({self.round.name}, {self.round.status}) "
                f"with {counted(len(self.instance_ids), 'instance')}")


@transaction.atomic
def recaption_discarded(
    *,
    reasons: Iterable[str] = (Instance.DiscardReason.CAPTION,),
    instance_ids: Iterable[int] | None = None,
    name: str | None = None,
    workers_per_item: int = round_default("workers_per_item"),
    reward_per_task: Decimal | None = None,
    follow_up_round: CollectionRound | None = None,
    created_by=None,
    open: bool = True,
) -> RecaptionReport:
    """A new caption round over instances discarded for the given reasons.

    The instances go back to ``awaiting_caption``; their old captions stay current until the new
    ones are chosen (the caption type's aggregate then replaces them), so nothing is lost if the
    round is cancelled.
    """
    reasons = list(reasons)
    instances = discarded_instances(reasons=reasons, instance_ids=instance_ids)
    if not instances:
        return RecaptionReport(round=None, instance_ids=[])
    projects = {instance.family.project_id for instance in instances}
    if len(projects) > 1:
        raise ValueError("the discarded instances belong to several projects; re-caption each project's "
                         "instances apart (name them with instance ids)")
    project = project_of(instances[0])
    previous = latest_caption_round(instances[0])
    if previous is not None and previous.project_id not in (None, getattr(project, "pk", None)):
        previous = None
    if follow_up_round is not None and follow_up_round.project_id != getattr(project, "pk", None):
        raise ValueError(f"round {follow_up_round.pk} belongs to another project than the instances")
    round = create_follow_up_round(
        after=previous, task_type=captioning_type(), project=project, workers_per_item=workers_per_item,
        name=name or f"Re-caption ({', '.join(reasons)}) {timezone.now():%Y-%m-%d %H:%M}",
        reward_per_task=reward_per_task, created_by=created_by,
    )
    if follow_up_round is not None:
        round.follow_up_round = follow_up_round
        round.full_clean()
        round.save(update_fields=["follow_up_round"])
    for instance in instances:
        instance_status.recaption(instance)
    add_items(round=round, targets=instances)
    if open:
        round = open_round(round=round)
    return RecaptionReport(round=round, instance_ids=[instance.pk for instance in instances])


def regenerate_discarded(
    *,
    reasons: Iterable[str] = ("response",),
    instance_ids: Iterable[int] | None = None,
    verification_round: CollectionRound | None = None,
    llm: LLMRunParams = LLMRunParams(),
) -> PipelineReport:
    """New reference candidates (sampled afresh, not the cached first answer) for instances
    discarded for the given reasons, each with a new verification item.

    The instances go back to ``awaiting_reference`` first; one whose request fails stays there,
    and ``generate_references`` picks it up later. Raises ``LLMNotConfigured`` (nothing changed)
    without a server.
    """
    configured_model(llm.model, llm.client)
    reasons = list(reasons)
    with transaction.atomic():
        instances = discarded_instances(reasons=reasons, instance_ids=instance_ids)
        if verification_round is not None:
            instances = instances_for_verification_round(verification_round, instances)
        for instance in instances:
            instance_status.regenerate(instance)
    report = generate_and_route_references(instances=instances, verification_round=verification_round, llm=llm)
    report.reset_instances = [instance.pk for instance in instances]
    return report
