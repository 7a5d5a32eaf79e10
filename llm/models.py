"""Prompt templates, runs (budgeted batches) and one record per LLM request.

The API key is configuration, never data: no model here has a field for it.
"""
from __future__ import annotations

import re
from decimal import Decimal

from django.db import models
from django.db.models import Q

from kernel.state_machine import StateMachine, Transition

# ``{name}`` is a placeholder; ``{{`` and ``}}`` are literal braces. Any other brace (JSON examples in
# a judge prompt, say) is left alone, so templates need no escaping beyond the placeholder syntax.
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TemplateRenderError(KeyError):
    pass


class PromptTemplateQuerySet(models.QuerySet):
    def latest_version(self, name: str) -> PromptTemplate:
        template = self.filter(name=name).order_by("-version").first()
        if template is None:
            raise PromptTemplate.DoesNotExist(f"no prompt template named {name!r}")
        return template


class PromptTemplate(models.Model):
    """One immutable version of a named prompt; editing makes the next version."""

    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField()
    text = models.TextField(help_text="Placeholders are written {name}; write {{ and }} for literal braces.")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PromptTemplateQuerySet.as_manager()

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="llm_template_name_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def placeholders(self) -> list[str]:
        names = [match.group(1) for match in PLACEHOLDER.finditer(self.text) if match.group(1)]
        return list(dict.fromkeys(names))

    def render(self, **values: object) -> str:
        missing = [name for name in self.placeholders if name not in values]
        if missing:
            raise TemplateRenderError(f"template {self} needs values for: {', '.join(missing)}")

        def substitute(match: re.Match) -> str:
            token = match.group(0)
            if token == "{{":
                return "{"
            if token == "}}":
                return "}"
            return str(values[match.group(1)])

        return PLACEHOLDER.sub(substitute, self.text)


class LLMRun(models.Model):
    """A named batch of calls sharing one budget."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        RUNNING = "running", "running"
        COMPLETED = "completed", "completed"
        BUDGET_EXCEEDED = "budget_exceeded", "stopped: budget reached"
        INTERRUPTED = "interrupted", "interrupted"

    name = models.CharField(max_length=200)
    purpose = models.CharField(max_length=100, blank=True)
    budget_usd = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="Empty means no cap."
    )
    spent_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "LLM run"

    def __str__(self) -> str:
        return self.name


class LLMCall(models.Model):
    """One request as sent, and what came back. A successful row doubles as the response cache."""

    class Endpoint(models.TextChoices):
        CHAT = "chat", "chat/completions"
        COMPLETIONS = "completions", "completions"

    class Status(models.TextChoices):
        OK = "ok", "ok"
        FAILED = "failed", "failed"
        # A well-formed answer the caller could not use (e.g. not the requested format): kept for
        # the record, never served from the cache, so a re-run asks again.
        REJECTED = "rejected", "rejected"

    run = models.ForeignKey(LLMRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    # SHA-256 of the canonical request (endpoint, model, messages with images, every parameter).
    request_hash = models.CharField(max_length=64)
    endpoint = models.CharField(max_length=20, choices=Endpoint.choices)
    model = models.CharField(max_length=200)
    purpose = models.CharField(max_length=100, blank=True)
    template_name = models.CharField(max_length=100, blank=True)
    template_version = models.PositiveIntegerField(null=True, blank=True)
    # The request body with inline image data replaced by its digest, to keep rows small.
    request = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    response_text = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Null when the model has no entry in LLM_PRICES.
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    latency_seconds = models.FloatField(null=True, blank=True, help_text="Duration of the last attempt.")
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "LLM call"
        indexes = [models.Index(fields=["request_hash"], name="llm_call_request_hash")]
        constraints = [
            # Failures may repeat; a success is stored once and served from here afterwards.
            models.UniqueConstraint(
                fields=["request_hash"], condition=Q(status="ok"), name="llm_call_one_success_per_request"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.model} {self.status} #{self.pk}"


_L = LLMCall.Status
# A call's status (docs/llm.md draws the same table): stored ok or failed; an ok answer the caller
# could not use is rejected later, which takes it out of the response cache.
LLM_CALL_STATUS = StateMachine(
    name="LLM call",
    statuses=_L.values,
    initial=[_L.OK, _L.FAILED],
    transitions=[
        Transition("reject", frozenset({_L.OK}), _L.REJECTED, "the caller could not use the answer"),
    ],
    writers=["llm.services"],
)
