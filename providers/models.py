"""What was published where, and every bonus we asked a provider to pay.

``Publication`` ties a round to one provider's external objects (an MTurk HIT type, a Prolific
study). ``BonusPayment`` is the bonus ledger: one row per bonus we ever meant to pay, keyed by a
deterministic token, so a rerun finds the row and never pays the same bonus twice.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from kernel.state_machine import StateMachine, Transition


class Publication(models.Model):
    class Status(models.TextChoices):
        PUBLISHING = "publishing", "Publishing"
        PUBLISHED = "published", "Published"
        EXPIRED = "expired", "Expired"

    round = models.ForeignKey("annotation.CollectionRound", on_delete=models.CASCADE, related_name="publications")
    provider = models.CharField(max_length=20)
    external_id = models.CharField(max_length=200, blank=True, help_text="HIT type id, study id…")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PUBLISHING)
    details = models.JSONField(default=dict, blank=True, help_text="Provider data that is not a secret.")
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round_id", "provider"]
        constraints = [
            models.UniqueConstraint(fields=["round", "provider"], name="one_publication_per_round_and_provider"),
        ]

    def __str__(self) -> str:
        return f"round {self.round_id} on {self.provider} ({self.status})"


_P = Publication.Status
# A publication's status (docs/providers.md draws the same table): publishing until the provider holds
# the round's tasks, expired once no new work is taken there (its submitted work can still be reviewed).
PUBLICATION_STATUS = StateMachine(
    name="publication",
    statuses=_P.values,
    initial=[_P.PUBLISHING],
    transitions=[
        Transition("publish", frozenset({_P.PUBLISHING}), _P.PUBLISHED, "the provider holds the round's tasks"),
        Transition("expire", frozenset({_P.PUBLISHING, _P.PUBLISHED}), _P.EXPIRED,
                   "the round closed or was cancelled: no new work there"),
    ],
    writers=["providers.services"],
)


class BonusPayment(models.Model):
    class Status(models.TextChoices):
        REQUESTED = "requested", "Requested"  # recorded, no pay call made yet
        # A pay call went out (or may have): possibly paid until the provider shows it; checked, never repeated blindly.
        SENDING = "sending", "Sending"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"  # refused by the provider (e.g. no funds); nothing paid, retried next run

    assignment = models.ForeignKey("annotation.Assignment", on_delete=models.PROTECT, related_name="bonus_payments")
    worker = models.ForeignKey("annotation.Worker", on_delete=models.PROTECT, related_name="bonus_payments")
    provider = models.CharField(max_length=20)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    reason = models.CharField(max_length=1000)
    token = models.CharField(max_length=64, unique=True, help_text="Deterministic; MTurk's UniqueRequestToken.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.REQUESTED, db_index=True)
    provider_record_id = models.CharField(max_length=200, blank=True, help_text="e.g. Prolific's bonus record id.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When the last pay call went out.")
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_payment_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"bonus {self.amount} {self.currency} to {self.worker_id} ({self.status})"


_B = BonusPayment.Status
# A bonus's status (docs/providers.md draws the same table). A pay call is never repeated blindly: a
# row found sending is first checked with the provider, and resent only when that is safe.
BONUS_PAYMENT_STATUS = StateMachine(
    name="bonus payment",
    statuses=_B.values,
    initial=[_B.REQUESTED],
    transitions=[
        Transition("send", frozenset({_B.REQUESTED, _B.FAILED, _B.SENDING}), _B.SENDING,
                   "a pay call goes out (again only when the provider did not pay or a resend is safe)"),
        Transition("settle", frozenset({_B.SENDING}), _B.PAID, "the provider paid it"),
        Transition("refuse", frozenset({_B.SENDING}), _B.FAILED, "the provider refused it; retried next run"),
    ],
    writers=["providers.services"],
)
