"""Leaderboard submissions: a predictions file judged against a project's board.

A project's owners decide whether people outside the project may submit (``SubmissionPolicy``)
and hand each such submitter a token of the project (``SubmissionToken``, stored as a SHA-256
digest only). Each accepted file becomes a ``Submission``: the new models' outputs and the judge
run that puts them on the board; the run's status is the submission's status.
"""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

DEFAULT_BUDGET_USD = Decimal("5")


class SubmissionPolicy(models.Model):
    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="submission_policy")
    accepts_outside_submissions = models.BooleanField(
        default=False, help_text="People outside the project may submit predictions with a submission token.")
    judge_model = models.CharField(
        max_length=200, blank=True, help_text="The LLM that judges submissions (empty: the first configured model).")
    budget_usd = models.DecimalField(
        max_digits=12, decimal_places=6, default=DEFAULT_BUDGET_USD, validators=[MinValueValidator(Decimal("0.000001"))],
        help_text="The most one submission's judging may spend, in USD.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "submission policies"

    def __str__(self) -> str:
        return f"submission policy of {self.project}"


class SubmissionToken(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="submission_tokens")
    label = models.CharField(max_length=100, help_text="Who holds it, e.g. a lab's name.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="The token's first characters, to name it.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.label} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Submission(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="leaderboard_submissions")
    token = models.ForeignKey(SubmissionToken, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="submissions", help_text="Set for an outside submitter.")
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+", help_text="Set for a project member.")
    submitter_label = models.CharField(max_length=100, help_text="The token's label or the member's username.")
    file_name = models.CharField(max_length=100)
    model_names = models.JSONField(default=list, help_text="The model names the file added.")
    rows = models.PositiveIntegerField(default=0)
    matched = models.PositiveIntegerField(default=0)
    unmatched = models.JSONField(default=list, blank=True, help_text="[row, reason] of rows that matched no instance.")
    step_run = models.OneToOneField("stepruns.StepRun", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="leaderboard_submission")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{', '.join(self.model_names)} by {self.submitter_label}"

    @property
    def status(self) -> str:
        return self.step_run.status if self.step_run_id else "lost"
