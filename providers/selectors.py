"""Reads of crowd-provider money: what a round paid per hour against its target, its spend, and the
bonuses paid for a worker's tasks."""
from __future__ import annotations

from decimal import Decimal

from annotation.models import Assignment, CollectionRound
from djangokit.money import MoneySum

from .base import money
from .models import BonusPayment
from .services import committed_spend, median_task_seconds, top_up_per_task


def paid_bonuses(assignments):
    """The bonuses paid for these assignments (the worker's "My work" page reads them)."""
    return BonusPayment.objects.filter(assignment__in=assignments, status=BonusPayment.Status.PAID)


def pay_summary(*, round: CollectionRound) -> dict:
    """Effective hourly wage at the median task time, from the reward alone and with the bonuses
    paid (averaged over approved tasks), against the round's target; and the round's spend."""
    median = median_task_seconds(round=round)
    approved = Assignment.objects.filter(round=round, review_status=Assignment.ReviewStatus.APPROVED).count()
    bonuses_paid = BonusPayment.objects.filter(
        assignment__round=round, status=BonusPayment.Status.PAID
    ).aggregate(total=MoneySum("amount"))["total"]

    def per_hour(pay: Decimal) -> Decimal | None:
        return money(pay * Decimal(3600) / Decimal(str(median))) if median else None

    bonus_per_task = bonuses_paid / approved if approved else Decimal("0")
    return {
        "median_seconds": median,
        "target_hourly_wage": round.target_hourly_wage,
        "effective_hourly_wage": per_hour(round.reward_per_task),
        "effective_hourly_wage_with_bonuses": per_hour(round.reward_per_task + bonus_per_task),
        "top_up_due_per_task": top_up_per_task(round=round, median_seconds=median),
        "approved": approved,
        "bonuses_paid": money(bonuses_paid),
        "committed_spend": committed_spend(round=round),
        "budget_cap": round.budget_cap,
    }
