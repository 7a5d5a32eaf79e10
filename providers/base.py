"""The one interface every crowd provider implements, and the plain results it returns.

A provider only talks to its platform; ``providers.services`` owns the database side (the
bonus ledger, linking submissions, local review states) and calls these operations.
"""
from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from kernel.errors import ServiceError
from kernel.money import quantize_money

if TYPE_CHECKING:
    from annotation.models import Assignment, CollectionRound, Worker

    from .models import BonusPayment, Publication


def money(value: Decimal, currency: str = "USD") -> Decimal:
    """An amount as a provider takes it: in the currency's minor unit (cents for the USD and GBP that
    MTurk and Prolific pay in)."""
    return quantize_money(value, currency)


def tasks_per_session(round: CollectionRound) -> int:
    """How many tasks one provider session (e.g. one Prolific study submission) may hold, one after
    another: the round's ``tasks_per_participant`` rule, 1 by default."""
    return int((round.qualification_rules or {}).get("tasks_per_participant", 1))


def deterministic_token(*, round: CollectionRound, purpose: str) -> str:
    """Same round and purpose, same token (so a retry is recognised); another round, another token.

    The round's creation time is part of it so a database rebuilt with reused ids cannot collide
    with tokens a provider still remembers. 64 hex characters: MTurk's UniqueRequestToken limit.
    """
    seed = f"{round.pk}:{round.created_at.isoformat()}:{purpose}"
    return hashlib.sha256(seed.encode()).hexdigest()[:64]


class ProviderError(ServiceError):
    """The provider refused or could not be reached; the message is safe to show (no secrets)."""

    status_code = 502


class ProviderNotConfigured(ProviderError):
    """The provider's credentials are not set on this server: nothing was sent, and the request is refused."""

    status_code = 409


class ProviderRefused(ProviderError):
    """The provider answered no: the call did nothing and repeating it unchanged will not help."""

    status_code = 409


class InsufficientBalance(ProviderError):
    """The provider account's balance does not cover the cost."""

    status_code = 402


class OverBudget(ProviderError):
    """The cost would exceed the round's budget cap."""

    status_code = 409


@dataclass
class PublishResult:
    publication: Publication
    tasks_created: int = 0
    tasks_existing: int = 0


@dataclass
class RemoteSubmission:
    """A submission as the provider sees it."""

    provider_assignment_id: str
    worker_external_id: str
    provider_task_id: str
    status: str  # active (started, not handed in), submitted, approved, rejected; others are ignored
    provider_status: str = ""  # the provider's own spelling
    answers: dict = field(default_factory=dict)
    submitted_at: datetime | None = None


@dataclass
class CostEstimate:
    provider: str
    currency: str
    tasks: int
    rewards: Decimal
    fees: Decimal
    expected_bonuses: Decimal
    bonus_fees: Decimal
    budget_cap: Decimal | None

    @property
    def total(self) -> Decimal:
        return money(self.rewards + self.fees + self.expected_bonuses + self.bonus_fees)

    @property
    def within_budget(self) -> bool:
        return self.budget_cap is None or self.total <= self.budget_cap


class CrowdProvider(abc.ABC):
    """Publish a round, sync its submissions, review, pay, block, qualify, expire, and cost it.

    A provider package also owns its worker pages (``worker_urls``: a URL module mounted at
    ``/work/<name>/``) and its rehearsal (``rehearsal``: a fake of the platform and simulated workers).
    """

    name: str = ""
    label: str = ""
    # Dotted path of the URL module of the provider's worker pages, or None without such pages.
    worker_urls: str | None = None
    # Which of those pages are rate-limited, and how: a group of ``settings.RATE_LIMITS``
    # ("task_request", "submission", ...) → URL names in ``worker_urls``. The rate-limit middleware
    # reads them through the registry (``providers.registry.rate_limited_views``): a new provider
    # declares its limits here and edits no setting.
    rate_limited_views: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({})
    # Whether submissions arrive from the platform (listed by ``list_submissions`` at sync).
    lists_submissions: bool = True
    # Whether publishing recruits workers on an outside platform, which the cockpit's publish (a dry
    # run, then a confirmation that spends money) is for; the local crowd works here once a round opens.
    recruits: bool = True

    @abc.abstractmethod
    def publish(self, *, round: CollectionRound, publication: Publication) -> PublishResult:
        """Create the round's tasks on the platform; a rerun creates nothing twice."""

    def check_publish(self, *, round: CollectionRound, options: dict) -> None:
        """Refuse (``ProviderRefused``) a publication the platform would refuse, by reading only, before
        anything is written (e.g. a round whose currency the account does not pay in)."""

    def holds_tasks(self, *, publication: Publication) -> bool:
        """Whether the platform already holds tasks of the publication (made by this or an earlier
        publish), so its row must be kept for a rerun to find them."""
        return bool(publication.external_id)

    @abc.abstractmethod
    def task_url_parameters(self) -> list[str]:
        """The query parameters the platform adds to our task URL."""

    @abc.abstractmethod
    def list_submissions(self, *, publication: Publication) -> list[RemoteSubmission]:
        """Every submission the platform holds for the publication (all pages)."""

    @abc.abstractmethod
    def confirm(self, *, assignment: Assignment) -> bool | None:
        """Does the platform show that this worker did this assignment of this task? One call.

        True: confirmed (the work may count); False: the platform does not know it, or knows it
        under another worker or task (forged); None: cannot tell yet (not yet handed over, or the
        platform could not be reached). ``ProviderError`` may be raised and means None.
        """

    def check_arrival(self, *, worker: Worker, provider_assignment_id: str, provider_task_id: str) -> bool | None:
        """Before a task is reserved for a worker who arrived from the platform: does the platform show
        that this worker holds this assignment of this task now? One call.

        True: it does (the task is held for the round's time limit); False: it does not (nothing is
        reserved); None: it cannot tell (the task is held ``UNCONFIRMED_HOLD_SECONDS`` at most, and a
        round holds at most ``UNCONFIRMED_HOLD_LIMIT`` such tasks). ``ProviderError`` means None.
        """
        return None

    def forged_if_unlisted(self, *, assignment: Assignment, now: datetime) -> bool:
        """Whether a submission of ours that a complete listing of the platform lacks is forged now,
        rather than possibly still on its way to the platform."""
        return True

    @abc.abstractmethod
    def approve(self, *, assignment: Assignment, feedback: str) -> None:
        """Approve (and so pay the reward); approving an approved submission is a no-op."""

    @abc.abstractmethod
    def reject(self, *, assignment: Assignment, feedback: str) -> None:
        """Reject with feedback to the worker; rejecting a rejected submission is a no-op."""

    @abc.abstractmethod
    def send_bonus(self, *, payment: BonusPayment) -> None:
        """Pay one ledger row. Must never pay a row twice, even when called again after a failure."""

    # Whether an accepted pay call settles later (the row stays "possibly paid" until
    # ``bonus_was_paid`` confirms it) rather than at once.
    bonus_settles_later: bool = False

    def bonus_was_paid(self, *, payment: BonusPayment) -> bool | None:
        """For a ledger row whose pay call may have gone out: did it pay? None when unknowable.

        Providers whose bonus call carries an idempotency token need not answer: resending is safe.
        """
        return None

    # Whether a pay call whose outcome is unknown may simply be sent again (an idempotency token).
    bonus_resend_is_safe: bool = True
    # For providers whose resend is not safe: how long after a pay call a researcher may resend a
    # row the provider still does not show (``pay_round --resend-unsettled``).
    settle_window_seconds: int = 0

    @abc.abstractmethod
    def block(self, *, worker: Worker, reason: str) -> None:
        """Stop the worker from taking our tasks on the platform."""

    def screens_language(self, *, round: CollectionRound) -> bool:
        """Whether this provider only sends the round workers who speak its language (so one who
        arrives may be recorded as a speaker); by default the publication's requirements do."""
        return True

    def after_submit(self, *, assignment: Assignment) -> dict:
        """Extra fields of the worker page's answer to a stored submission (e.g. where to go next)."""
        return {}

    @classmethod
    def rehearsal(cls, *, seed: int | None, currency: str) -> Rehearsal:
        """A rehearsal of this provider: its fake started in-process, and its simulated workers."""
        raise ProviderRefused(f"the {cls.name} provider cannot be rehearsed")

    def qualify(self, *, worker: Worker, qualification: str, value: int = 1) -> None:
        """Grant a worker one of our qualifications; platforms without them ignore it."""

    @abc.abstractmethod
    def expire(self, *, publication: Publication) -> None:
        """Stop new work on the publication's tasks."""

    def pause(self, *, publication: Publication) -> None:
        """The round was paused: stop new workers from starting its tasks on the platform (work already
        started may still be handed in). Platforms without such an operation ignore it; the round's
        own status already keeps our pages from handing out tasks."""

    def resume(self, *, publication: Publication, round: CollectionRound) -> None:
        """The paused round was resumed: let workers start its tasks on the platform again."""

    def extend(self, *, publication: Publication, round: CollectionRound) -> None:
        """The round was extended (``annotation.services.rounds.extend_round``): give its tasks on the platform
        more time where the platform limits it (MTurk HIT lifetimes). Platforms whose tasks run until
        they are stopped (Prolific studies) and the local provider have nothing to do."""

    @abc.abstractmethod
    def balance(self) -> Decimal | None:
        """The money available on the account (None when the platform has no account balance)."""

    @abc.abstractmethod
    def fee_rate(self, *, round: CollectionRound) -> Decimal:
        """Fee on each reward, as a fraction."""

    # Fee on each bonus, as a fraction.
    bonus_fee_rate: Decimal = Decimal("0")

    def estimate_cost(self, *, round: CollectionRound, expected_bonuses: Decimal = Decimal("0"),
                      items: int | None = None, tasks: int | None = None) -> CostEstimate:
        """``tasks``: the tasks to pay for (the work a round still needs); else ``items`` (a planned
        round not created yet) or the round's items, each ``workers_per_item`` times."""
        if tasks is None:
            tasks = (round.items.count() if items is None else items) * round.workers_per_item
        rewards = money(round.reward_per_task * tasks)
        rate = self.fee_rate(round=round)
        return CostEstimate(
            provider=self.name,
            currency=round.currency,
            tasks=tasks,
            rewards=rewards,
            fees=money(self.reward_fee(reward=round.reward_per_task, rate=rate) * tasks),
            expected_bonuses=money(expected_bonuses),
            bonus_fees=money(expected_bonuses * self.bonus_fee_rate),
            budget_cap=round.budget_cap,
        )

    def reward_fee(self, *, reward: Decimal, rate: Decimal) -> Decimal:
        return money(reward * rate) if reward and rate else Decimal("0.00")


class Rehearsal(abc.ABC):
    """A dry run's view of one provider: the provider bound to its fake, workers, and the fake's bill."""

    provider: CrowdProvider

    @abc.abstractmethod
    def simulate_workers(self, *, round: CollectionRound, publication: Publication, rng, accuracy: float,
                         median_seconds: float) -> int:
        """Simulated workers take and submit the round's tasks as real ones would; returns how many."""

    def settle(self) -> None:
        """Let payments the platform settles later settle now (the fake's clock moves on)."""

    @abc.abstractmethod
    def spend(self, *, round: CollectionRound) -> tuple[Decimal, Decimal, Decimal]:
        """(rewards, bonuses, fees) that would have been paid."""

    def stop(self) -> None:
        """Stop the fake."""
