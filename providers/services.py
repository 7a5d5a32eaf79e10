"""Writes of crowd-provider work: publish, sync, review, pay (with the bonus ledger), block, expire.

Commands and views call these. Money rules: the cost of a round (rewards, fees, expected bonuses)
is checked against its budget cap and the provider balance before anything is published; a bonus
is a ledger row with a deterministic token before any pay call goes out, so a rerun finds the
row and never pays it twice; top-ups never take a round past its budget cap.
"""
from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.errors import CrowdWorkError, InvalidTransition, NotQualified
from annotation.models import Assignment, CollectionRound, Worker, WorkItem
from annotation.selectors import approval_split, slots_still_needed
from annotation.services import rounds as crowd_rounds
from annotation.services.confirmation import record_confirmation
from annotation.services.engine import request_assignment
from annotation.services.review import approve_assignment, reject_assignment
from annotation.services.rounds import check_transition, open_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import grant_qualification, worker_changed
from djangokit.transitions import move
from kernel.state_machine import TransitionRefused

from .base import (
    CostEstimate,
    CrowdProvider,
    InsufficientBalance,
    OverBudget,
    ProviderError,
    ProviderRefused,
    PublishResult,
    deterministic_token,
    money,
    tasks_per_session,
)
from .models import BONUS_PAYMENT_STATUS, PUBLICATION_STATUS, BonusPayment, Publication
from .registry import get_provider, provider_class
from .review import APPROVE, review_submissions

logger = logging.getLogger(__name__)

# Bonus rows count against the budget until paid or given up: a refused one is retried by the next run.
COUNTED_BONUS = list(BonusPayment.Status.values)
SETTLING = "pay call accepted; the provider settles it later (possibly paid until it shows the payment)"
# The ledger reason of an extra task's reward: the session's first task is paid by the provider's
# reward, each further one (``tasks_per_participant``) by a bonus of the task reward.
EXTRA_TASK_REASON = "Reward for a further task in the same study session. Thank you for your work."
UNSETTLED_BONUS = [BonusPayment.Status.REQUESTED, BonusPayment.Status.SENDING, BonusPayment.Status.FAILED]


# --- money -----------------------------------------------------------------------------------------


def median_task_seconds(*, round: CollectionRound) -> float | None:
    durations = list(
        Assignment.objects.counted()
        .filter(round=round, duration_seconds__isnull=False)
        .values_list("duration_seconds", flat=True)
    )
    return statistics.median(durations) if durations else None


def top_up_per_task(*, round: CollectionRound, median_seconds: float | None) -> Decimal:
    """What each task must add to its reward to pay the target hourly wage at the median time."""
    if not median_seconds or not round.target_hourly_wage:
        return Decimal("0.00")
    due = money(round.target_hourly_wage * Decimal(str(median_seconds)) / Decimal(3600))
    return max(due - round.reward_per_task, Decimal("0.00"))


def estimate_cost(
    *, round: CollectionRound, provider: CrowdProvider, expected_seconds: float | None = None,
    items: int | None = None,
) -> CostEstimate:
    """Rewards + fees for every slot still needed (``slots_still_needed``), plus the top-ups the
    target wage needs at the expected time.

    ``items`` stands in for the round's items, each with all its slots: a planned round (unsaved) is
    costed before it exists.
    """
    if expected_seconds is not None:
        seconds = expected_seconds
    else:
        seconds = median_task_seconds(round=round) if round.pk else None
    per_task = top_up_per_task(round=round, median_seconds=seconds)
    if items is None and round.pk:
        # A saved round costs the work it still needs: judgments already in are not bought again.
        tasks = sum(slots_still_needed(round=round).values())
        return provider.estimate_cost(round=round, expected_bonuses=per_task * tasks, tasks=tasks)
    items = round.items.count() if items is None else items
    tasks = items * round.workers_per_item
    return provider.estimate_cost(round=round, expected_bonuses=per_task * tasks, items=items)


@dataclass
class PlanCost:
    """A round's cost on one provider before it runs, and the wage its reward pays at the expected time."""

    estimate: CostEstimate
    expected_seconds: float
    effective_hourly_wage: Decimal
    target_hourly_wage: Decimal

    @property
    def meets_target_wage(self) -> bool:
        return self.effective_hourly_wage >= self.target_hourly_wage


def estimate_plan_cost(*, round: CollectionRound, items: int | None, provider_name: str,
                       expected_seconds: float) -> PlanCost:
    """The cost of ``items`` items of ``round`` (a planned, unsaved one), or of the work a saved round
    still needs (``items`` None), on the provider, its budget check, and the effective hourly wage of the reward alone at ``expected_seconds`` per task
    (the estimate adds the top-ups that bring it to the target wage)."""
    if not expected_seconds or expected_seconds <= 0:
        raise ProviderRefused("the expected seconds per task must be positive")
    estimate = estimate_cost(round=round, provider=get_provider(provider_name), expected_seconds=expected_seconds,
                             items=items)
    wage = money(round.reward_per_task * Decimal(3600) / Decimal(str(expected_seconds)))
    return PlanCost(estimate=estimate, expected_seconds=expected_seconds, effective_hourly_wage=wage,
                    target_hourly_wage=round.target_hourly_wage)


def committed_spend(*, round: CollectionRound) -> Decimal:
    """What the round has committed: rewards of work holding a slot and every bonus in the ledger,
    each with its provider's fee. Checked against the budget cap before more is committed."""
    reward = round.reward_per_task
    total = Decimal("0")
    providers: dict[str, CrowdProvider] = {}
    slots = (
        Assignment.objects.holding_a_slot().filter(round=round)
        .exclude(bonus_payments__reason=EXTRA_TASK_REASON)
        .values_list("worker__provider").annotate(n=Count("pk")).order_by()
    )
    for name, count in slots:
        provider = providers.setdefault(name, get_provider(name))
        total += count * (reward + provider.reward_fee(reward=reward, rate=provider.fee_rate(round=round)))
    for name, amount in BonusPayment.objects.filter(assignment__round=round, status__in=COUNTED_BONUS).values_list(
        "provider", "amount"
    ):
        provider = providers.setdefault(name, get_provider(name))
        total += amount + provider.reward_fee(reward=amount, rate=provider.bonus_fee_rate)
    return money(total)


# --- publishing -------------------------------------------------------------------------------------


class NothingToPublish(InvalidTransition):
    """Every item of the round has its judgments: there is no work to offer."""


def check_work_to_publish(*, round: CollectionRound) -> dict[int, int]:
    """The slots the round still needs (``slots_still_needed``); NothingToPublish when it needs none."""
    needed = slots_still_needed(round=round)
    if round.status == CollectionRound.Status.COMPLETE or (round.status != CollectionRound.Status.DRAFT
                                                           and not needed):
        raise NothingToPublish(f"nothing to publish: all {round.items.count()} items of the round are complete")
    return needed


def publish_round(
    *, round: CollectionRound, provider_name: str, options: dict | None = None,
    provider: CrowdProvider | None = None, expected_seconds: float | None = None,
) -> PublishResult:
    """Check everything, then create the round's tasks on the provider (only the work it still needs,
    ``slots_still_needed``), then open the round. Safe to rerun. A round whose items are all complete
    is refused (NothingToPublish) before anything is created.

    A refusal changes nothing: every check is made before the first write, reading only (the
    round's status, the budget cap, the provider's configuration and balance, and the provider's
    own ``check_publish``, e.g. the Prolific workspace's currency). Raises OverBudget when the
    estimate exceeds the budget cap and InsufficientBalance when the provider account cannot cover
    rewards and fees. The round moves to ``open`` only once the provider has accepted the
    publication; when the provider refuses it, the publication row this call made is removed
    again unless the provider already holds tasks of it (then a rerun finds and completes them).
    """
    provider = provider or get_provider(provider_name)
    round = CollectionRound.objects.get(pk=round.pk)
    check_work_to_publish(round=round)
    if round.status not in (CollectionRound.Status.DRAFT, CollectionRound.Status.OPEN):
        raise InvalidTransition(f"cannot publish a round that is {round.status}")
    if round.status == CollectionRound.Status.DRAFT:
        check_transition(round=round, action="open")  # refused now, not after the provider's calls
    estimate = estimate_cost(round=round, provider=provider, expected_seconds=expected_seconds)
    if not estimate.within_budget:
        raise OverBudget(
            f"estimated cost {estimate.total} {estimate.currency} exceeds the budget cap {round.budget_cap}"
        )
    balance = provider.balance()
    needed = money(estimate.rewards + estimate.fees)
    if balance is not None and balance < needed:
        raise InsufficientBalance(f"the {provider.name} balance {balance} does not cover rewards and fees {needed}")
    provider.check_publish(round=round, options=options or {})
    with transaction.atomic():
        publication, created = Publication.objects.get_or_create(
            round=round, provider=provider.name, defaults={"details": {"options": options or {}}}
        )
    try:
        result = provider.publish(round=round, publication=publication)
    except ProviderRefused:
        if created and not provider.holds_tasks(publication=publication):
            Publication.objects.filter(pk=publication.pk).delete()
        raise
    if round.status == CollectionRound.Status.DRAFT:
        round = open_round(round=round)
    with transaction.atomic():
        publication = Publication.objects.select_for_update().get(pk=publication.pk)
        publication.details = {**publication.details, "estimate": {
            "total": str(estimate.total), "rewards": str(estimate.rewards), "fees": str(estimate.fees),
            "expected_bonuses": str(estimate.expected_bonuses),
        }}
        publication.save(update_fields=["details"])
        if publication.status == Publication.Status.PUBLISHING:
            move(publication, PUBLICATION_STATUS, "publish", published_at=timezone.now())
    result.publication = publication
    logger.info("round %s published on %s: %d created, %d existing", round.pk, provider.name,
                result.tasks_created, result.tasks_existing)
    return result


def provider_for_publication(publication: Publication, providers: dict | None = None) -> CrowdProvider:
    if providers and publication.provider in providers:
        return providers[publication.provider]
    return get_provider(publication.provider)


# --- provider workers and their tasks ----------------------------------------------------------------


@transaction.atomic
def get_or_create_provider_worker(*, provider: str, external_id: str) -> Worker:
    provider_class(provider)  # only registered providers have workers
    worker, _created = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


def request_provider_assignment(
    *, round: CollectionRound, worker: Worker, provider_assignment_id: str, provider_task_id: str,
    item: WorkItem | None = None, now: datetime | None = None, provider: CrowdProvider | None = None,
) -> Assignment | None:
    """The assignment behind a provider's assignment id: found again on a reload, else taken.

    Before a task is reserved, the worker's provider (``provider``, default: the registered one) is
    asked whether it shows this worker on this assignment (``_arrival_hold``).

    With ``item`` (an MTurk HIT is one item) the worker gets exactly that item, under the same
    rules as the engine (qualification, one open task per round, per-worker limit, budget cap).
    """
    session = Assignment.objects.filter(
        round=round, worker=worker, provider_assignment_id=provider_assignment_id
    ).order_by("pk")
    existing = session.filter(status=Assignment.Status.ASSIGNED).first() or session.last()
    if existing is not None and (
        item is not None or existing.status != Assignment.Status.SUBMITTED
        or session.filter(status=Assignment.Status.SUBMITTED).count() >= tasks_per_session(round)
    ):
        # A reload, or the session holds all the tasks the round allows it (``tasks_per_participant``).
        return existing
    if ((round.qualification_rules or {}).get("language_matched") and round.language not in worker.languages
            and get_provider(worker.provider).screens_language(round=round)):
        # The provider screens language at publish time (MTurk locale requirements, Prolific's
        # language filters): a worker it sends to this round is recorded as working in its language.
        # A Prolific study without a language filter screens nothing, so its participants are not.
        worker.languages = [*worker.languages, round.language]
        worker.save(update_fields=["languages"])
    assignment = request_assignment(
        round=round, worker=worker, now=now, item=item,
        provider_assignment_id=provider_assignment_id, provider_task_id=provider_task_id,
        budget_allows=_budget_allows_with_fees,
        arrival_hold=lambda: _arrival_hold(worker=worker, provider_assignment_id=provider_assignment_id,
                                           provider_task_id=provider_task_id, provider=provider),
    )
    if assignment is None and existing is not None:
        return existing  # no task left for the session's next one: it is done
    return _follow_provider_ids(assignment, provider_assignment_id, provider_task_id)


def _arrival_hold(*, worker: Worker, provider_assignment_id: str, provider_task_id: str,
                  provider: CrowdProvider | None = None) -> dict:
    """Ask the worker's provider whether it shows this worker on this assignment before a task is
    reserved (``CrowdProvider.check_arrival``): refused (nothing reserved) when it does not; held the
    round's time limit when it does; held briefly, and only a few at once per round, when it cannot tell."""
    if worker.user_id is not None:
        return {}  # logged in to the platform itself: who they say
    provider = provider or get_provider(worker.provider)
    try:
        vouched = provider.check_arrival(worker=worker, provider_assignment_id=provider_assignment_id,
                                         provider_task_id=provider_task_id)
    except ProviderError as error:
        logger.warning("%s could not check the arrival of worker %s on %s: %s", provider.name,
                       worker.external_id, provider_assignment_id, error)
        vouched = None
    if vouched is False:
        logger.warning("%s does not show worker %s on %s: nothing reserved", provider.name, worker.external_id,
                       provider_assignment_id)
        raise NotQualified(_("Your crowd platform does not show this task as yours. Please open it from "
                                   "the platform."))
    if vouched:
        return {}
    return {"hold_seconds": settings.UNCONFIRMED_HOLD_SECONDS, "hold_limit": settings.UNCONFIRMED_HOLD_LIMIT}


def _budget_allows_with_fees(round: CollectionRound, worker: Worker) -> bool:
    """One more task of this worker's provider, fee included, stays within the round's cap."""
    provider = get_provider(worker.provider)
    fee = provider.reward_fee(reward=round.reward_per_task, rate=provider.fee_rate(round=round))
    return committed_spend(round=round) + round.reward_per_task + fee <= round.budget_cap


def _follow_provider_ids(assignment: Assignment | None, provider_assignment_id: str, provider_task_id: str):
    """A worker who returned the task at the provider and took it again comes back with new ids:
    the open assignment here follows them, so the hand-over and sync use the live ones."""
    if (
        assignment is not None
        and assignment.status == Assignment.Status.ASSIGNED
        and (assignment.provider_assignment_id, assignment.provider_task_id)
        != (provider_assignment_id, provider_task_id)
    ):
        assignment.provider_assignment_id = provider_assignment_id
        assignment.provider_task_id = provider_task_id
        assignment.save(update_fields=["provider_assignment_id", "provider_task_id"])
    return assignment


# --- confirmation -------------------------------------------------------------------------------------

# How long a confirmation looked up at submit time is reused: a repeated submit (double click,
# retry, a hostile loop) makes no further provider call meanwhile.
CONFIRM_CACHE_SECONDS = 60


def confirm_submission(*, assignment: Assignment, provider: CrowdProvider | None = None) -> Assignment:
    """Ask the worker's provider once whether it shows this submission, and record the answer.

    Called when the worker saves: honest work is confirmed (and may complete its item) at once where
    the provider already shows it; anything else stays unconfirmed for ``sync_round`` to settle. A
    provider that cannot be reached changes nothing.
    """
    if assignment.status != Assignment.Status.SUBMITTED or assignment.confirmation == Assignment.Confirmation.CONFIRMED:
        return assignment
    # Keyed on more than the row id, which a rebuilt database reuses.
    key = f"providers:confirm:{assignment.pk}:{assignment.accepted_at.timestamp()}:{assignment.provider_assignment_id}"
    if not cache.add(key, True, timeout=CONFIRM_CACHE_SECONDS):
        return assignment
    provider = provider or get_provider(assignment.worker.provider)
    try:
        confirmed = provider.confirm(assignment=assignment)
    except ProviderError as error:
        logger.warning("assignment %s: %s could not confirm it: %s", assignment.pk, provider.name, error)
        return assignment
    if confirmed is None:
        return assignment
    state = Assignment.Confirmation.CONFIRMED if confirmed else Assignment.Confirmation.FORGED
    if not confirmed:
        logger.warning("assignment %s: %s does not know worker %s's submission %s", assignment.pk, provider.name,
                       assignment.worker.external_id, assignment.provider_assignment_id)
    return record_confirmation(assignment=assignment, confirmation=state)


# --- sync ---------------------------------------------------------------------------------------------


@dataclass
class SyncReport:
    linked: int = 0  # provider submissions matching one saved here
    recovered: int = 0  # saved here from the answers the provider holds (our save never arrived)
    mirrored: int = 0  # review states taken over from the provider (e.g. MTurk auto-approval)
    confirmed: int = 0  # submissions of ours the provider showed for the first time
    awaiting_confirmation: int = 0  # not shown yet, and may still reach the provider
    unmatched: list[dict] = field(default_factory=list)  # seen only at the provider: for a person to look at
    forged: list[dict] = field(default_factory=list)  # saved here, unknown to the provider: never counted


def sync_round(*, round: CollectionRound, providers: dict | None = None) -> SyncReport:
    """Read every submission the providers hold for the round and match it to ours.

    Matched on (provider assignment id, worker id). A submission we lack is saved from the answers
    the provider holds, at the time the provider received it: it counts when it reached the
    provider within the task's time limit, however late the sync runs. Anything else is reported.
    """
    report = SyncReport()
    for publication in Publication.objects.filter(round=round):
        provider = provider_for_publication(publication, providers)
        if not provider.lists_submissions:
            continue
        listed = set()
        for remote in provider.list_submissions(publication=publication):
            if remote.status == "active":
                # Started at the provider, not handed in there yet: it vouches for the worker.
                listed.add((remote.provider_assignment_id, remote.worker_external_id))
                continue
            if remote.status not in ("submitted", "approved", "rejected"):
                continue
            listed.add((remote.provider_assignment_id, remote.worker_external_id))
            assignment = (
                Assignment.objects.select_related("worker")
                .filter(round=round, provider_assignment_id=remote.provider_assignment_id,
                        worker__provider=publication.provider, worker__external_id=remote.worker_external_id)
                .first()
            )
            if assignment is None:
                report.unmatched.append({"provider": publication.provider, "assignment": remote.provider_assignment_id,
                                         "worker": remote.worker_external_id, "status": remote.provider_status})
                continue
            if assignment.status != Assignment.Status.SUBMITTED:
                try:
                    assignment = submit_assignment(
                        assignment_id=assignment.pk, worker=assignment.worker, data=remote.answers,
                        now=remote.submitted_at,
                    ).assignment
                    report.recovered += 1
                except CrowdWorkError as error:
                    report.unmatched.append({"provider": publication.provider,
                                             "assignment": remote.provider_assignment_id,
                                             "worker": remote.worker_external_id, "status": remote.provider_status,
                                             "problem": error.message})
                    continue
            else:
                report.linked += 1
            if remote.status == "approved" and assignment.review_status == Assignment.ReviewStatus.SUBMITTED:
                approve_assignment(assignment=assignment)
                report.mirrored += 1
            elif remote.status == "rejected" and assignment.review_status != Assignment.ReviewStatus.REJECTED:
                reject_assignment(assignment=assignment, feedback="rejected on the provider")
                report.mirrored += 1
        _settle_confirmations(round=round, publication=publication, provider=provider, listed=listed, report=report)
    return report


def _settle_confirmations(*, round: CollectionRound, publication: Publication, provider: CrowdProvider,
                          listed: set, report: SyncReport) -> None:
    """Against the provider's complete listing: our submissions it shows are confirmed; those it
    does not show are forged (reported, kept, never counted) once they can no longer reach it."""
    now = timezone.now()
    pending = (
        Assignment.objects.submitted()
        .filter(round=round, worker__provider=publication.provider)
        .exclude(confirmation=Assignment.Confirmation.CONFIRMED)
        .select_related("worker").order_by("pk")
    )
    for assignment in pending:
        if (assignment.provider_assignment_id, assignment.worker.external_id) in listed:
            record_confirmation(assignment=assignment, confirmation=Assignment.Confirmation.CONFIRMED)
            report.confirmed += 1
        elif provider.forged_if_unlisted(assignment=assignment, now=now):
            if assignment.confirmation != Assignment.Confirmation.FORGED:
                record_confirmation(assignment=assignment, confirmation=Assignment.Confirmation.FORGED)
            report.forged.append({"provider": publication.provider, "assignment": assignment.provider_assignment_id,
                                  "worker": assignment.worker.external_id, "local_id": assignment.pk})
        else:
            report.awaiting_confirmation += 1


# --- review and pay -----------------------------------------------------------------------------------


def _provider_of(assignment: Assignment, cache: dict) -> CrowdProvider:
    name = assignment.worker.provider
    if name not in cache:
        cache[name] = get_provider(name)
    return cache[name]


@dataclass
class PayReport:
    approved: int = 0
    bonuses_granted: int = 0
    bonuses_paid: int = 0
    bonuses_unsettled: int = 0
    bonuses_failed: int = 0
    # Possibly paid, not yet shown settled by the provider: (payment id, worker, amount, seconds since
    # the pay call). Never resent automatically; see ``resend_unsettled_bonus``.
    awaiting_settlement: list[tuple[int, str, Decimal, int | None]] = field(default_factory=list)
    skipped_for_budget: int = 0
    held_for_review: int = 0  # submissions the round's approval policy leaves to a researcher
    top_up_per_task: Decimal = Decimal("0.00")
    errors: list[str] = field(default_factory=list)
    sync: SyncReport | None = None


def grant_bonus(*, assignment: Assignment, amount: Decimal, reason: str, purpose: str) -> tuple[BonusPayment, bool]:
    """The ledger row for one bonus (created once per assignment and purpose); (row, created)."""
    token = deterministic_token(round=assignment.round, purpose=f"assignment:{assignment.pk}:bonus:{purpose}")
    with transaction.atomic():
        return BonusPayment.objects.get_or_create(
            token=token,
            defaults={"assignment": assignment, "worker": assignment.worker, "provider": assignment.worker.provider,
                      "amount": money(amount), "currency": assignment.round.currency, "reason": reason},
        )


def send_bonus(*, payment: BonusPayment, providers: dict | None = None) -> BonusPayment:
    """Pay one ledger row at most once.

    The row is marked ``sending`` (committed) before the pay call; a row found ``sending`` later is
    first checked with the provider, and only resent when the provider's call is idempotent or
    says it did not pay.
    """
    cache = providers if providers is not None else {}
    payment = BonusPayment.objects.select_related("assignment__round", "assignment__worker", "worker").get(
        pk=payment.pk
    )
    provider = _provider_of(payment.assignment, cache)
    if payment.status == BonusPayment.Status.PAID:
        return payment
    if payment.status == BonusPayment.Status.SENDING:
        paid = provider.bonus_was_paid(payment=payment)
        if paid:
            return _settle(payment, BonusPayment.Status.PAID)
        if paid is None and not provider.bonus_resend_is_safe:
            # Possibly paid (settling, or the pay call's answer was lost): never paid blindly twice.
            return payment
    move(payment, BONUS_PAYMENT_STATUS, "send", sent_at=timezone.now())
    try:
        provider.send_bonus(payment=payment)
    except ProviderRefused as error:
        return _settle(payment, BonusPayment.Status.FAILED, error=str(error))
    except ProviderError as error:
        BonusPayment.objects.filter(pk=payment.pk).update(error=str(error))
        logger.warning("bonus %s not settled: %s", payment.pk, error)
        return payment
    if provider.bonus_settles_later:
        # Accepted, paid later: possibly paid until the provider shows it settled.
        payment.error = SETTLING
        payment.save(update_fields=["error", "provider_record_id"])
        return payment
    return _settle(payment, BonusPayment.Status.PAID)


def _settle(payment: BonusPayment, status: str, error: str = "") -> BonusPayment:
    paid = status == BonusPayment.Status.PAID
    return move(payment, BONUS_PAYMENT_STATUS, "settle" if paid else "refuse", error=error,
                paid_at=timezone.now() if paid else None, provider_record_id=payment.provider_record_id)


def pay_round(
    *, round: CollectionRound, top_up: bool = False, feedback: str = "", providers: dict | None = None,
    only: Iterable[int] | None = None,
) -> PayReport:
    """Approve every submitted, unreviewed assignment; with ``top_up`` grant each approved one the
    bonus that brings it to the target hourly wage at the median task time (once, via the ledger);
    then send every bonus not yet settled. ``only``: the ids of the assignments to approve and pay
    (a rehearsal pays only the work it simulated); every one when None."""
    cache = providers if providers is not None else {}
    report = PayReport()
    # Settle confirmations first: only work the provider shows is paid, and forgeries are reported.
    report.sync = sync_round(round=round, providers=cache)
    mine = Assignment.objects.filter(round=round)
    if only is not None:
        mine = mine.filter(pk__in=list(only))
    # Only work the provider confirmed is approved and paid.
    pending = (
        mine.counted().filter(review_status=Assignment.ReviewStatus.SUBMITTED)
        .select_related("worker", "round").order_by("pk")
    )
    # The round's approval policy (minimum gold accuracy) holds the rest back for a researcher's review.
    pending, held = approval_split(round=round, assignments=pending)
    report.held_for_review = held.count()
    reviewed = review_submissions(assignments=pending, decision=APPROVE, feedback=feedback, providers=cache)
    report.approved = len(reviewed.done)
    report.errors += [f"assignment {assignment.pk}: {message}" for assignment, message in reviewed.failed]
    _grant_extra_task_rewards(round=round, report=report, providers=cache, assignments=mine)
    if top_up:
        _grant_top_ups(round=round, report=report, providers=cache, assignments=mine)
    for payment in BonusPayment.objects.filter(assignment__in=mine, status__in=UNSETTLED_BONUS).order_by("pk"):
        payment = send_bonus(payment=payment, providers=cache)
        if payment.status == BonusPayment.Status.PAID:
            report.bonuses_paid += 1
        elif payment.status == BonusPayment.Status.FAILED:
            report.bonuses_failed += 1
            report.errors.append(f"bonus {payment.pk}: {payment.error}")
        else:
            report.bonuses_unsettled += 1
            if payment.status == BonusPayment.Status.SENDING:
                age = int((timezone.now() - payment.sent_at).total_seconds()) if payment.sent_at else None
                report.awaiting_settlement.append((payment.pk, str(payment.worker), payment.amount, age))
    return report


class ResendRefused(ProviderRefused):
    """This bonus may not be resent."""


def resend_unsettled_bonus(*, payment_id: int, round: CollectionRound, providers: dict | None = None) -> BonusPayment:
    """A researcher's explicit resend of a possibly-paid bonus the provider still does not show.

    Refused unless the row is ``sending`` and its pay call is older than the provider's settle
    window: a resend may pay the bonus twice if the first call did go through.
    """
    cache = providers if providers is not None else {}
    payment = (
        BonusPayment.objects.select_related("assignment__round", "assignment__worker", "worker")
        .filter(pk=payment_id, assignment__round=round).first()
    )
    if payment is None:
        raise ResendRefused(f"round {round.pk} has no bonus {payment_id}")
    if payment.status != BonusPayment.Status.SENDING:
        raise ResendRefused(f"bonus {payment.pk} is {payment.status}, not awaiting settlement")
    provider = _provider_of(payment.assignment, cache)
    window = provider.settle_window_seconds
    age = (timezone.now() - payment.sent_at).total_seconds() if payment.sent_at else None
    if age is None or age < window:
        raise ResendRefused(
            f"bonus {payment.pk} was sent {int(age or 0)} s ago; it may still settle, so it can be resent only "
            f"{window} s after the pay call"
        )
    if provider.bonus_was_paid(payment=payment):
        return _settle(payment, BonusPayment.Status.PAID)
    logger.warning("bonus %s resent by request after %d s unsettled; it may be paid twice", payment.pk, int(age))
    move(payment, BONUS_PAYMENT_STATUS, "send", sent_at=timezone.now())
    try:
        provider.send_bonus(payment=payment)
    except ProviderRefused as error:
        return _settle(payment, BonusPayment.Status.FAILED, error=str(error))
    payment.error = SETTLING if provider.bonus_settles_later else ""
    payment.save(update_fields=["error", "provider_record_id"])
    return payment if provider.bonus_settles_later else _settle(payment, BonusPayment.Status.PAID)


def _grant_extra_task_rewards(*, round: CollectionRound, report: PayReport, providers: dict, assignments) -> None:
    """Each approved task after the first of its provider session (several tasks under one provider
    submission, ``tasks_per_participant``) gets the task reward as a bonus, once, within the budget cap."""
    if round.reward_per_task < Decimal("0.01"):
        return
    approved = (
        assignments.counted().filter(review_status=Assignment.ReviewStatus.APPROVED)
        .exclude(provider_assignment_id="").select_related("worker", "round").order_by("pk")
    )
    for assignment in approved:
        first = (
            Assignment.objects.submitted().filter(round=round, worker=assignment.worker,
                                                  provider_assignment_id=assignment.provider_assignment_id)
            .order_by("pk").values_list("pk", flat=True).first()
        )
        if first == assignment.pk:
            continue  # the provider's reward pays the session's first task
        provider = _provider_of(assignment, providers)
        reward = round.reward_per_task
        # Counted as a reward slot until now; from here on as a ledger row instead.
        freed = reward + provider.reward_fee(reward=reward, rate=provider.fee_rate(round=round))
        _grant_within_cap(assignment=assignment, amount=reward, reason=EXTRA_TASK_REASON, purpose="extra-task",
                          report=report, providers=providers, freed=freed)

def _grant_top_ups(*, round: CollectionRound, report: PayReport, providers: dict, assignments) -> None:
    per_task = top_up_per_task(round=round, median_seconds=median_task_seconds(round=round))
    report.top_up_per_task = per_task
    if per_task < Decimal("0.01"):
        return
    reason = (
        f"Top-up to the target wage of {round.target_hourly_wage} {round.currency}/hour "
        f"at the median task time. Thank you for your work."
    )
    approved = (
        assignments.counted().filter(review_status=Assignment.ReviewStatus.APPROVED)
        .select_related("worker", "round").order_by("pk")
    )
    for assignment in approved:
        _grant_within_cap(assignment=assignment, amount=per_task, reason=reason, purpose="top-up",
                          report=report, providers=providers)


def _grant_within_cap(*, assignment: Assignment, amount: Decimal, reason: str, purpose: str, report: PayReport,
                      providers: dict, freed: Decimal = Decimal("0")) -> None:
    """Grant one bonus once (its ledger row), unless it would take the round's committed spend, less
    ``freed`` (what the row replaces there), past the budget cap."""
    with transaction.atomic():
        # Lock the round: concurrent payers must not together pass the budget cap.
        locked = CollectionRound.objects.select_for_update().get(pk=assignment.round_id)
        token = deterministic_token(round=locked, purpose=f"assignment:{assignment.pk}:bonus:{purpose}")
        if BonusPayment.objects.filter(token=token).exists():
            return
        if locked.budget_cap is not None:
            provider = _provider_of(assignment, providers)
            fees = provider.reward_fee(reward=amount, rate=provider.bonus_fee_rate)
            if committed_spend(round=locked) - freed + amount + fees > locked.budget_cap:
                report.skipped_for_budget += 1
                return
        _payment, created = grant_bonus(assignment=assignment, amount=amount, reason=reason, purpose=purpose)
        report.bonuses_granted += int(created)

# --- blocks, qualifications, expiry -------------------------------------------------------------------


def block_worker(*, worker: Worker, reason: str) -> Worker:
    """Block here (no more tasks) and at the worker's provider."""
    get_provider(worker.provider).block(worker=worker, reason=reason)
    with transaction.atomic():
        Worker.objects.filter(pk=worker.pk).update(is_blocked=True)
        # The worker's next request is refused: a cached copy of them is not served after this commits.
        worker_changed(worker)
    worker.refresh_from_db()
    return worker


def qualify_worker(*, worker: Worker, project, granted_by=None, source: str = "owner") -> list[str]:
    """Qualify the worker for the project's rounds: here (the allow-list the engine checks for
    ``qualified_only`` rounds) and at the provider, on every qualification type the project's
    publications there require (MTurk). Returns the provider qualification ids granted."""
    grant_qualification(worker=worker, project=project, source=source, granted_by=granted_by)
    publications = Publication.objects.filter(round__project=project, provider=worker.provider)
    required = {}
    for publication in publications:
        options = publication.details.get("options") or {}
        if options.get("qualification_type_id"):
            required[options["qualification_type_id"]] = int(options.get("qualification_min_score", 1))
    if required:
        provider = get_provider(worker.provider)
        for qualification, value in sorted(required.items()):
            provider.qualify(worker=worker, qualification=qualification, value=value)
    return sorted(required)


def expire_round(*, round: CollectionRound, providers: dict | None = None) -> list[Publication]:
    """Stop new work on every publication of the round (submitted work can still be reviewed)."""
    expired = []
    for publication in Publication.objects.filter(round=round).exclude(status=Publication.Status.EXPIRED):
        provider_for_publication(publication, providers).expire(publication=publication)
        try:
            move(publication, PUBLICATION_STATUS, "expire")
        except TransitionRefused:  # expired meanwhile by another close
            publication.refresh_from_db(fields=["status"])
        expired.append(publication)
    return expired


def _live_publications(*, round: CollectionRound, providers: dict | None):
    """(publication, its provider) for each publication of the round not yet expired."""
    for publication in Publication.objects.filter(round=round).exclude(status=Publication.Status.EXPIRED):
        yield publication, provider_for_publication(publication, providers)


def pause_round(*, round: CollectionRound, providers: dict | None = None) -> CollectionRound:
    """Pause the round (``annotation.services.rounds.pause_round``), then its tasks at the providers
    (``CrowdProvider.pause``: a Prolific study is paused, MTurk HITs expire until resumed)."""
    round = crowd_rounds.pause_round(round=round)
    for publication, provider in _live_publications(round=round, providers=providers):
        provider.pause(publication=publication)
    return round


def resume_round(*, round: CollectionRound, providers: dict | None = None) -> CollectionRound:
    """Resume the round, then its tasks at the providers (``CrowdProvider.resume``)."""
    round = crowd_rounds.resume_round(round=round)
    for publication, provider in _live_publications(round=round, providers=providers):
        provider.resume(publication=publication, round=round)
    return round


def extend_round(*, round: CollectionRound, time_limit_seconds: int | None = None,
                 budget_cap: Decimal | None = None, providers: dict | None = None) -> CollectionRound:
    """Extend the round (``annotation.services.rounds.extend_round``), then its live publications at their
    providers (``CrowdProvider.extend``)."""
    round = crowd_rounds.extend_round(round=round, time_limit_seconds=time_limit_seconds, budget_cap=budget_cap)
    for publication, provider in _live_publications(round=round, providers=providers):
        provider.extend(publication=publication, round=round)
    return round


def close_round(*, round: CollectionRound, providers: dict | None = None) -> CollectionRound:
    """Close the round (no more work is taken or stored) and stop its tasks at every provider."""
    round = crowd_rounds.close_round(round=round)
    expire_round(round=round, providers=providers)
    return round


def cancel_round(*, round: CollectionRound, providers: dict | None = None) -> CollectionRound:
    """Cancel the round and stop its tasks at every provider."""
    round = crowd_rounds.cancel_round(round=round)
    expire_round(round=round, providers=providers)
    return round


def delete_round_tasks(*, round: CollectionRound, providers: dict | None = None) -> list[str]:
    """Delete the expired round's tasks where the provider supports it (MTurk HITs whose work is all
    reviewed); returns the ids it could not delete yet."""
    kept = []
    for publication in Publication.objects.filter(round=round, status=Publication.Status.EXPIRED):
        provider = provider_for_publication(publication, providers)
        if hasattr(provider, "delete"):
            kept += provider.delete(publication=publication)
    return kept
