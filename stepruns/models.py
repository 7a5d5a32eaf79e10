"""Background runs of the pipeline's LLM steps, started from the project board.

A run's status and counters (progress, cost) are owned by ``stepruns.lifecycle``: nothing else
assigns them.
"""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models

from kernel.state_machine import StateMachine, Transition
from llm.steps import format_usd

from .errors import RunConflict


class StepRun(models.Model):
    """One LLM step over a project's data, run in the background with a budget."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"
        STOPPED = "stopped", "stopped: budget reached"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="step_runs")
    kind = models.CharField(max_length=60, help_text="A name in stepruns.kinds.registry.KINDS.")
    model = models.CharField(max_length=200, blank=True, help_text="The LLM model the step asks.")
    parameters = models.JSONField(default=dict, blank=True)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True,
                                     help_text="Empty means no cap.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    done = models.PositiveIntegerField(default=0, help_text="Requests answered so far.")
    total = models.PositiveIntegerField(default=0, help_text="Requests the step has sent or will send.")
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0),
                                   help_text="What the run's LLM calls were charged, every attempt's (kept up "
                                             "to date from its LLM run by stepruns.lifecycle).")
    failures = models.JSONField(default=list, blank=True, help_text="Messages, one per failed subject.")
    summary = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True, help_text="Ids of what the step stored.")
    llm_run = models.ForeignKey("llm.LLMRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                help_text="The LLM run every attempt charges, capped by the budget.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True,
                                        help_text="Last sign of life of the worker carrying the run.")
    attempts = models.PositiveIntegerField(default=0, help_text="Workers that took the run (more than one "
                                                                "after a worker was lost).")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def cost_shown(self) -> str:
        """The cost in USD without trailing zeros (0.02169600 → 0.021696)."""
        return format_usd(self.cost_usd)

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


_S = StepRun.Status
# A run's status: queued → running → succeeded / failed / stopped (docs/pipeline.md draws the same table).
STEP_RUN_STATUS = StateMachine(
    name="step run",
    statuses=_S.values,
    initial=[_S.QUEUED],
    transitions=[
        Transition("begin", frozenset({_S.QUEUED}), _S.RUNNING, "a worker takes the run"),
        # Only when its worker stopped beating (stale): another worker carries it on.
        Transition("take_over", frozenset({_S.RUNNING}), _S.RUNNING, "another worker carries on a lost run"),
        Transition("succeed", frozenset({_S.RUNNING}), _S.SUCCEEDED, "the step returned"),
        Transition("stop", frozenset({_S.RUNNING}), _S.STOPPED, "the step returned with its budget reached"),
        Transition("fail", frozenset({_S.QUEUED, _S.RUNNING}), _S.FAILED, "the step could not run or broke off"),
    ],
    writers=["stepruns.lifecycle"],
    error=RunConflict,
    refused="step run {subject} is {current}; it cannot {action}",
)
