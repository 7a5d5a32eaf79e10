"""The local crowd: workers log in to the platform; nothing leaves it and no fees apply.

Rewards and bonuses of local workers are settled outside the platform (payroll, vouchers), so
the ledger records them as paid when they are granted. Local workers use the engine's own pages
(``/work/``), so this provider has no pages of its own.
"""
from __future__ import annotations

from decimal import Decimal

from ..base import CrowdProvider, PublishResult, RemoteSubmission


class LocalProvider(CrowdProvider):
    name = "local"
    label = "Local login"
    lists_submissions = False
    recruits = False  # local workers see every open round on /work/

    def publish(self, *, round, publication) -> PublishResult:
        # Open rounds are listed on /work/ for every local worker; there is nothing to create. The
        # items still needing work are what it offers.
        from annotation.selectors import slots_still_needed

        return PublishResult(publication=publication, tasks_existing=len(slots_still_needed(round=round)))

    def task_url_parameters(self) -> list[str]:
        return []

    def list_submissions(self, *, publication) -> list[RemoteSubmission]:
        return []  # submissions only ever arrive through our own pages

    def confirm(self, *, assignment) -> bool | None:
        return True  # a local worker logged in to the platform: confirmed by construction

    def approve(self, *, assignment, feedback: str) -> None:
        pass  # nothing to tell anyone: the review is recorded here only

    def reject(self, *, assignment, feedback: str) -> None:
        pass

    def send_bonus(self, *, payment) -> None:
        pass

    def block(self, *, worker, reason: str) -> None:
        pass  # the local block is the worker's is_blocked flag, set by the service

    def expire(self, *, publication) -> None:
        pass

    def balance(self) -> Decimal | None:
        return None

    def fee_rate(self, *, round) -> Decimal:
        return Decimal("0")

    @classmethod
    def rehearsal(cls, *, seed, currency):
        from .rehearsal import LocalRehearsal

        return LocalRehearsal(provider=cls())
