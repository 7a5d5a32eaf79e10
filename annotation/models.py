"""Crowd work: workers, collection rounds, their work items and the assignments of items to workers.

A round asks ``workers_per_item`` distinct workers to do one task on each of its items. An item
points at what is judged (a family, an instance, a reference candidate, two model outputs or an
output and the accepted reference, a review set) through explicit nullable foreign keys; the
round's task type says which of them its items use and checks them. An assignment is one worker's attempt at one item.
"""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinLengthValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from datasets_app.models import Language
from kernel.money import minor_unit, quantize_money
from kernel.state_machine import StateMachine, Transition

from .errors import InvalidTransition

from . import hooks


def validate_language_codes(value: object) -> None:
    if not isinstance(value, list) or not all(code in Language.values for code in value):
        raise ValidationError(
            _("Languages must be a list of codes from %(known)s."), params={"known": ", ".join(Language.values)}
        )


def known_provider_names() -> list[str]:
    """Names of the registered crowd providers, as the crowd layer tells them (``annotation.hooks``)."""
    return sorted(hooks.provider_names())


def validate_provider_name(value: object) -> None:
    if value not in known_provider_names():
        raise ValidationError(
            _("Unknown crowd provider %(value)s; known: %(known)s"),
            params={"value": value, "known": ", ".join(known_provider_names())},
        )


class Worker(models.Model):
    """Someone who does tasks: a local user, or a provider's worker id (Prolific PID, MTurk workerId)."""

    # Workers who log in to the platform itself; every other provider name comes from the registry.
    LOCAL = "local"

    provider = models.CharField(max_length=20, default=LOCAL, validators=[validate_provider_name])
    external_id = models.CharField(
        max_length=200, help_text="The provider's worker id; the user id for local workers."
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="crowd_worker",
    )
    is_blocked = models.BooleanField(default=False)
    languages = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_language_codes],
        help_text='Languages the worker annotates in, as codes (e.g. ["en", "ja"]); rounds with '
        "the language_matched rule only go to workers who list the round's language.",
    )
    # The language crowdbench's own pages speak to the worker in, as the worker chose it on their
    # settings page; blank: the round's language when they work in it (``annotation.languages``).
    page_language = models.CharField(max_length=8, choices=Language.choices, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # When the worker last opened "My work": reviews after this are new feedback on the work list.
    # Changed only by ``annotation.services.workers.mark_work_history_seen``.
    work_history_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["provider", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="worker_provider_external_id"),
            models.CheckConstraint(
                condition=~Q(provider="local") | Q(user__isnull=False), name="local_worker_has_user"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id}"

    @property
    def language_names(self) -> list[str]:
        """The languages the worker listed, by name in the active language ("English", "日本語")."""
        return [str(Language(code).label) if code in Language.values else code for code in self.languages or []]


class Qualification(models.Model):
    """A worker allowed onto a project's rounds that ask for qualified workers (``qualified_only``).
    Granted only through ``annotation.services.workers.grant_qualification``."""

    class Source(models.TextChoices):
        OWNER = "owner", _("Allow-listed by an owner")
        QUALIFYING_ROUND = "qualifying_round", _("Passed the qualifying round")

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="qualifications")
    source = models.CharField(max_length=20, choices=Source.choices)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "worker_id"]
        constraints = [models.UniqueConstraint(fields=["worker", "project"], name="one_qualification_per_project")]

    def __str__(self) -> str:
        return f"worker {self.worker_id} qualified for project {self.project_id}"


def validate_task_type(value: str) -> None:
    from .task_types import REGISTRY

    if value not in REGISTRY:
        raise ValidationError(
            _("Unknown task type %(value)s; known: %(known)s"),
            params={"value": value, "known": ", ".join(sorted(REGISTRY))},
        )


def validate_qualification_rules(value: object) -> None:
    """Rules a worker must meet to get tasks of a round; see QUALIFICATION_RULES."""
    if not isinstance(value, dict):
        raise ValidationError(_("Qualification rules must be a JSON object."))
    unknown = set(value) - set(QUALIFICATION_RULES)
    if unknown:
        raise ValidationError(
            _("Unknown qualification rules: %(unknown)s; known: %(known)s"),
            params={"unknown": ", ".join(sorted(unknown)), "known": ", ".join(QUALIFICATION_RULES)},
        )
    for key in ("min_approved_tasks", "max_tasks_per_worker", "warn_after_failed_checks", "stop_after_failed_checks"):
        if key in value and (not isinstance(value[key], int) or isinstance(value[key], bool) or value[key] < 0):
            raise ValidationError(_("%(key)s must be a non-negative integer."), params={"key": key})
    if "qualifies_for_project" in value:
        share = value["qualifies_for_project"]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ValidationError(_("qualifies_for_project must be a number above 0 and at most 1."))
    if "min_gold_accuracy_for_approval" in value:
        share = value["min_gold_accuracy_for_approval"]
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1):
            raise ValidationError(_("min_gold_accuracy_for_approval must be a number from 0 to 1, or null."))
    if "tasks_per_participant" in value:
        limit = value["tasks_per_participant"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValidationError(_("tasks_per_participant must be a positive integer."))
    for key in ("language_matched", "qualified_only"):
        if key in value and not isinstance(value[key], bool):
            raise ValidationError(_("%(key)s must be true or false."), params={"key": key})
    if "providers" in value:
        providers = value["providers"]
        if not isinstance(providers, list) or not all(
            isinstance(name, str) and name in known_provider_names() for name in providers
        ):
            raise ValidationError(
                _("providers must be a list drawn from %(known)s."),
                params={"known": ", ".join(known_provider_names())},
            )


QUALIFICATION_RULES = {
    "min_approved_tasks": "approved assignments the worker needs across all rounds",
    "max_tasks_per_worker": "assignments one worker may take in this round",
    "providers": "crowd providers whose workers may take part",
    "language_matched": "true: only workers who list the round's language (IRR ranks each language "
    "with its own speakers)",
    "qualified_only": "true: only workers qualified for the round's project (allow-listed by an owner "
    "or through its qualifying round)",
    "qualifies_for_project": "this round is its project's qualifying round (gold items, with feedback after "
    "each answer): a worker who answers all its items with at least this share right is qualified",
    "warn_after_failed_checks": "failed gold checks in the round after which the worker is warned (default 2; 0 never)",
    "stop_after_failed_checks": "failed gold checks in the round after which the worker gets no more of its "
    "tasks (default 5; 0 never)",
    "tasks_per_participant": "tasks one provider session (a Prolific participant's study submission) may "
    "hold, one after another (default 1); the reward pays the first, bonuses the others",
    "min_gold_accuracy_for_approval": "share of the worker's gold checks in the round that must pass for "
    "pay_round to approve their work automatically; the rest waits for review (default: no minimum)",
}

# The quality policy of a round unless its qualification_rules say otherwise (in the spirit of
# Potato's attention checks: warn after 2 failures, stop after 5).
QUALITY_POLICY_DEFAULTS = {
    "warn_after_failed_checks": 2, "stop_after_failed_checks": 5, "min_gold_accuracy_for_approval": None,
}


MAX_WORKERS_PER_ITEM = 100
MAX_TIME_LIMIT_SECONDS = 7 * 24 * 3600


class CollectionRound(models.Model):
    """A batch of crowd work. Its fields are the one source of a round's limits, defaults and
    choices: the cockpit's forms, the API's serializers and ``create_round`` read them from here."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        OPEN = "open", _("Open")
        PAUSED = "paused", _("Paused")
        # Every item has its judgments; reached and left only through ``annotation.services``
        # (the last item's completion, a rejection that reopens an item, items added).
        COMPLETE = "complete", _("Complete")
        CLOSED = "closed", _("Closed")
        CANCELLED = "cancelled", _("Cancelled")

    name = models.CharField(max_length=200)
    project = models.ForeignKey(
        "projects.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="rounds"
    )
    task_type = models.CharField(max_length=50, validators=[validate_task_type])
    instructions = models.TextField(
        blank=True, max_length=20000,  # enforced by the forms and serializers built from this field
        help_text="Extra guidance shown to workers above the task's standard instructions.",
    )
    language = models.CharField(max_length=8, choices=Language.choices, default=Language.ENGLISH)
    workers_per_item = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_WORKERS_PER_ITEM)]
    )
    # Adaptive overlap: start each item with this many workers and add more, up to workers_per_item,
    # only while the final majority is still open (e.g. pairwise 3 -> 5). Empty: a fixed
    # workers_per_item (the paper's fixed 5, for exact reproduction).
    min_workers_per_item = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Adaptive overlap: workers per item to start with; more are added up to workers per item "
        "only while the majority is open. Empty: always workers per item.",
    )
    reward_per_task = models.DecimalField(
        max_digits=8, decimal_places=2, default=Decimal("0.00"), validators=[MinValueValidator(0)]
    )
    currency = models.CharField(max_length=3, default="USD", validators=[MinLengthValidator(3)])
    target_hourly_wage = models.DecimalField(
        max_digits=8, decimal_places=2, default=Decimal("18.00"), validators=[MinValueValidator(0)]
    )
    time_limit_seconds = models.PositiveIntegerField(
        default=1800, validators=[MinValueValidator(30), MaxValueValidator(MAX_TIME_LIMIT_SECONDS)],
        help_text="An assignment expires after this."
    )
    qualification_rules = models.JSONField(
        default=dict, blank=True, validators=[validate_qualification_rules]
    )
    budget_cap = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Rewards of all taken assignments stay within this; empty means no cap.",
    )
    estimated_seconds_per_task = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="The researcher's estimate of one task's time; workers see it until real task times exist.",
    )
    consent_text = models.TextField(
        blank=True,
        help_text="Study information and consent, plain text (blank lines separate paragraphs). When set, "
        "each worker reads and accepts it before their first task of the round.",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True)
    # The state of an adaptive pairwise sampler (goal, budget, models, batches drawn, last progress);
    # empty for every other round. Written only by ``annotation.samplers.adaptive``.
    sampler_state = models.JSONField(default=dict, blank=True, editable=False)
    # VisIT-Bench chaining: where the next stage's items go once this round's items complete
    # (instruction generation → caption, caption → verification, with references generated on the way).
    follow_up_round = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="preceding_rounds",
        help_text="Completed items here automatically feed this round (see docs/pipeline.md).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.task_type}, {self.status})"

    def clean(self) -> None:
        self._clean_money()
        if self.min_workers_per_item is not None:
            if self.min_workers_per_item > self.workers_per_item:
                raise ValidationError({"min_workers_per_item": _(
                    "Adaptive overlap starts with at most workers per item (%(max)d).") % {"max": self.workers_per_item}})
            from .task_types import REGISTRY

            if self.task_type in REGISTRY and not REGISTRY.get(self.task_type).adaptive_overlap:
                raise ValidationError({"min_workers_per_item": _(
                    "%(type)s rounds have no single choice to take a majority of; adaptive overlap needs one.")
                    % {"type": self.task_type}})
        if self.follow_up_round_id is None:
            return
        # Each task type names the type of round it may feed (VisIT-Bench order).
        from .task_types import REGISTRY

        expected = REGISTRY.get(self.task_type).follow_up_type if self.task_type in REGISTRY else None
        if expected is None or self.follow_up_round.task_type != expected:
            chains = ", ".join(f"{key} → {t.follow_up_type}" for key, t in REGISTRY.items() if t.follow_up_type)
            raise ValidationError({"follow_up_round": _(
                "A %(type)s round cannot feed a %(next)s round; the rounds that can be chained: %(chains)s."
            ) % {"type": self.task_type, "next": self.follow_up_round.task_type, "chains": chains}})

    def _clean_money(self) -> None:
        """Amounts are paid and shown in the currency's minor unit: none may be finer (0.50 JPY)."""
        places = minor_unit(self.currency)
        message = (_("%(currency)s amounts have no decimal places.") if places == 0 else
                   _("%(currency)s amounts have at most %(places)d decimal places."))
        errors = {name: message % {"currency": self.currency, "places": places}
                  for name in ("reward_per_task", "target_hourly_wage", "budget_cap")
                  if isinstance(value := getattr(self, name), Decimal) and value != quantize_money(value, self.currency)}
        if errors:
            raise ValidationError(errors)

    @property
    def quality_policy(self) -> dict:
        """Warn and stop thresholds (failed gold checks) and the minimum gold accuracy for automatic approval."""
        rules = self.qualification_rules or {}
        return {key: rules.get(key, default) for key, default in QUALITY_POLICY_DEFAULTS.items()}

    @property
    def task_type_handler(self):
        from .task_types import get_task_type

        return get_task_type(self.task_type)


_R = CollectionRound.Status
# A round's status (docs/crowd-work.md draws the same table). A paused round hands out no new tasks;
# work in flight may still be submitted. "complete" and "reopen" are the engine's own
# (``annotation.services.rounds.AUTOMATIC_ACTIONS``): an open round is complete once every item has
# its judgments, and open again when a rejection reopens an item or items are added.
ROUND_STATUS = StateMachine(
    name="round",
    statuses=_R.values,
    initial=[_R.DRAFT],
    transitions=[
        Transition("open", frozenset({_R.DRAFT}), _R.OPEN, "the researcher opens it (it has items)"),
        # Nobody has worked on a draft: its settings and items are still the researcher's to change.
        Transition("edit", frozenset({_R.DRAFT}), None, "its settings or items are changed"),
        Transition("pause", frozenset({_R.OPEN}), _R.PAUSED, "no new tasks are handed out"),
        Transition("resume", frozenset({_R.PAUSED}), _R.OPEN, "tasks are handed out again"),
        # A draft has no work under way to extend: its settings are still its own to set.
        Transition("extend", frozenset({_R.OPEN, _R.PAUSED}), None, "more time per task or a higher budget cap"),
        # More workers may take the round's tasks: restricting qualification rules are dropped.
        Transition("widen", frozenset({_R.OPEN, _R.PAUSED}), None, "restricting qualification rules are dropped"),
        Transition("close", frozenset({_R.OPEN, _R.PAUSED, _R.COMPLETE}), _R.CLOSED, "no more work is taken"),
        Transition("cancel", frozenset({_R.DRAFT, _R.OPEN, _R.PAUSED, _R.COMPLETE}), _R.CANCELLED, "abandoned"),
        Transition("complete", frozenset({_R.OPEN}), _R.COMPLETE, "its last item has its judgments"),
        Transition("reopen", frozenset({_R.COMPLETE}), _R.OPEN, "a rejection reopened an item, or items were added"),
    ],
    writers=["annotation.services.rounds"],
    error=InvalidTransition,
)


def round_default(name: str):
    """The default of a round field, for the code that takes a round's settings as arguments."""
    return CollectionRound._meta.get_field(name).get_default()


# The columns a work item's targets may use; each task type names its own and checks them
# (``TaskType.check_item``), so a new type reuses these columns instead of adding one.
TARGET_COLUMNS = ("family", "instance", "candidate", "output_a", "output_b", "reference", "review_set")


def _any_target() -> Q:
    condition = Q()
    for name in TARGET_COLUMNS:
        condition |= Q(**{f"{name}__isnull": False})
    return condition


class WorkItem(models.Model):
    """One thing a round asks workers about."""

    # Indexed by the unique (round, position), which leads with it.
    round = models.ForeignKey(CollectionRound, on_delete=models.CASCADE, related_name="items", db_index=False)
    position = models.PositiveIntegerField()
    family = models.ForeignKey(
        "datasets_app.InstructionFamily", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    instance = models.ForeignKey(
        "datasets_app.Instance", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    candidate = models.ForeignKey(
        "datasets_app.ReferenceCandidate", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    output_a = models.ForeignKey(
        "datasets_app.ModelOutput", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    output_b = models.ForeignKey(
        "datasets_app.ModelOutput", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reference = models.ForeignKey(
        "datasets_app.AcceptedReference", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    review_set = models.ForeignKey(
        "datasets_app.ReviewSet", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Pairwise sides as named in battles; kept here so renamed or deleted outputs do not rewrite history.
    side_a_name = models.CharField(max_length=200, blank=True)
    side_b_name = models.CharField(max_length=200, blank=True)
    is_gold = models.BooleanField(default=False, help_text="A gold / attention-check item.")
    gold_answer = models.JSONField(
        default=dict, blank=True, help_text="Expected values of the derived result, e.g. {\"winner\": \"a\"}."
    )
    completed_at = models.DateTimeField(null=True, blank=True, db_index=True)
    aggregate_result = models.JSONField(null=True, blank=True)

    @property
    def number(self) -> int:
        """The item's number as researchers read it everywhere: 1 for the first (``position`` counts from 0)."""
        return self.position + 1

    class Meta:
        ordering = ["round_id", "position"]
        indexes = [
            # "Next task" walks the round's open items in position order: without this, every claim
            # steps over the completed ones first, and so costs more the further a round has got.
            models.Index(fields=["round", "position"], condition=Q(completed_at__isnull=True),
                         name="open_item_position_per_round"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["round", "position"], name="work_item_position_per_round"),
            models.CheckConstraint(condition=_any_target(), name="work_item_has_a_target"),
            models.CheckConstraint(
                condition=Q(output_b__isnull=True) | ~Q(output_a=models.F("output_b")),
                name="work_item_pair_of_distinct_outputs",
            ),
            models.CheckConstraint(
                condition=Q(is_gold=True) | Q(gold_answer={}), name="work_item_gold_answer_only_on_gold"
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.position} of round {self.round_id}"

    def clean(self) -> None:
        if self.is_gold and not self.gold_answer:
            raise ValidationError({"gold_answer": "A gold item states its expected answer."})
        if self.round_id is None:
            return
        from .task_types import REGISTRY

        if self.round.task_type not in REGISTRY:
            raise ValidationError({"round": _("The round's task type %(type)s is not known.")
                                   % {"type": self.round.task_type}})
        handler = REGISTRY.get(self.round.task_type)
        # The task type is the authority on which targets fit; it also fills the derived side names.
        handler.check_item(self)


class AssignmentQuerySet(models.QuerySet):
    def holding_a_slot(self):
        """Assignments that count against ``workers_per_item``: taken and not given up or rejected.

        Submitted work the provider has not confirmed holds its slot only until its time limit;
        work the provider does not know (forged) holds none.
        """
        return self.filter(
            Q(status=Assignment.Status.ASSIGNED)
            | Q(status=Assignment.Status.SUBMITTED, confirmation=Assignment.Confirmation.CONFIRMED)
            | Q(status=Assignment.Status.SUBMITTED, confirmation=Assignment.Confirmation.UNCONFIRMED,
                expires_at__gt=Now()),
        ).exclude(review_status=Assignment.ReviewStatus.REJECTED)

    def holding_a_slot_at(self, now):
        """``holding_a_slot`` once the holds past their time limit at ``now`` are let go (the engine
        expires them on its next look, ``expire_stale_assignments``)."""
        return self.holding_a_slot().exclude(status=Assignment.Status.ASSIGNED, expires_at__lte=now)

    def without_lapsed_looks(self, now):
        """Without the looks at a task that ran out by ``now`` before the worker started it: no claim on
        the item (``expire_stale_assignments`` deletes them)."""
        return self.exclude(in_preview=True, status=Assignment.Status.ASSIGNED, expires_at__lte=now)

    def submitted(self):
        return self.filter(status=Assignment.Status.SUBMITTED)

    def confirmed(self):
        """Submitted work the worker's provider confirmed (local work is confirmed by construction),
        reviewed or not: the one filter for facts about a worker (failed check questions, qualifying
        answers, gold accuracy). Forged or not-yet-confirmed provider work says nothing about anyone:
        an entry link carrying a real worker's id proves nothing (``docs/providers.md``, *Trust*)."""
        return self.filter(status=Assignment.Status.SUBMITTED, confirmation=Assignment.Confirmation.CONFIRMED)

    def counted(self):
        """The judgments that count: submitted, not rejected, and confirmed by the worker's provider.

        The one filter for completion, aggregates, ratings, agreement, IRR, quality and releases.
        """
        return self.confirmed().exclude(review_status=Assignment.ReviewStatus.REJECTED)


class Assignment(models.Model):
    """One worker's attempt at one work item."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", _("Assigned")
        SUBMITTED = "submitted", _("Submitted")
        EXPIRED = "expired", _("Expired")
        RETURNED = "returned", _("Returned")

    class Confirmation(models.TextChoices):
        # Whether the worker's provider confirms that this worker did this assignment; only confirmed
        # work counts. Changed only by ``annotation.services.confirmation.record_confirmation``.
        UNCONFIRMED = "unconfirmed", "Not yet confirmed by the provider"
        CONFIRMED = "confirmed", "Confirmed"
        FORGED = "forged", "Unknown to the provider"

    class ReviewStatus(models.TextChoices):
        NONE = "", "—"
        SUBMITTED = "submitted", "Submitted, awaiting review"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    # No index of their own: the indexes in Meta lead with each of them. Every submission writes a new
    # version of the row into every index, so each index the table need not have costs every task.
    round = models.ForeignKey(CollectionRound, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    item = models.ForeignKey(WorkItem, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments", db_index=False)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    review_status = models.CharField(
        max_length=20, choices=ReviewStatus.choices, blank=True, default=ReviewStatus.NONE
    )
    provider_assignment_id = models.CharField(max_length=200, blank=True)
    provider_task_id = models.CharField(
        max_length=200, blank=True, help_text="HIT id, study id or similar."
    )
    accepted_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # Held only for a short look (``TASK_PREVIEW_SECONDS``) by a page that showed it: the worker has
    # not started it, and it gets the round's time limit when they do (``services.engine.start_assignment``).
    in_preview = models.BooleanField(default=False)
    submitted_at = models.DateTimeField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    # What the worker saw that the item alone does not say: left/right sides, review order.
    presentation = models.JSONField(default=dict, blank=True)
    payload = models.JSONField(null=True, blank=True, help_text="The validated submission.")
    result = models.JSONField(
        null=True, blank=True, help_text="The submission in item terms (e.g. winner a/b)."
    )
    gold_passed = models.BooleanField(null=True, blank=True)
    # Guardrails against machine-written answers (instruction and caption tasks): what the page
    # recorded, and flags for the review queue (flagged, never rejected automatically).
    input_stats = models.JSONField(
        null=True, blank=True,
        help_text='Recorded by the page: {"pastes": n, "pasted_chars": n, "typing_seconds": s}.',
    )
    flags = models.JSONField(
        default=list, blank=True,
        help_text='For review, e.g. {"kind": "near_duplicate", "of": "worker", "assignment": 12, "similarity": 0.96}.',
    )
    confirmation = models.CharField(
        max_length=20, choices=Confirmation.choices, default=Confirmation.UNCONFIRMED,
        help_text="Local workers are confirmed by construction; provider work once the provider shows it.",
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_feedback = models.TextField(blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["round_id", "accepted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "worker"], name="one_assignment_per_item_and_worker"),
            models.UniqueConstraint(
                fields=["round", "worker"],
                condition=Q(status="assigned"),
                name="one_open_assignment_per_round_and_worker",
            ),
            models.CheckConstraint(
                condition=Q(status="submitted") | Q(review_status=""),
                name="review_status_only_when_submitted",
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | (Q(payload__isnull=False) & Q(submitted_at__isnull=False)),
                name="submitted_assignment_has_payload",
            ),
        ]
        indexes = [
            # A round's assignments (and its open ones by expiry).
            models.Index(fields=["round", "status", "expires_at"], name="assignment_expiry"),
            # A worker's own tasks in a round (their facts, read by every "next task"): without it each
            # request scanned every submitted assignment of the round.
            models.Index(fields=["worker", "round", "status"], name="assignment_of_worker_in_round"),
            # The periodic expiry of open tasks of every round.
            models.Index(fields=["expires_at"], condition=Q(status="assigned"), name="open_assignment_expiry"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.worker}, {self.status})"


_A = Assignment.Status
# An assignment's status (docs/crowd-work.md draws these tables). It starts assigned; the worker
# submits it or gives it back, or its time runs out. An expired one still takes work that reached its
# provider in time.
ASSIGNMENT_STATUS = StateMachine(
    name="assignment",
    statuses=_A.values,
    initial=[_A.ASSIGNED],
    transitions=[
        Transition("submit", frozenset({_A.ASSIGNED, _A.EXPIRED}), _A.SUBMITTED, "the worker's answers are stored"),
        Transition("give_back", frozenset({_A.ASSIGNED}), _A.RETURNED,
                   "the worker gives it back, or its item cannot be shown"),
        Transition("expire", frozenset({_A.ASSIGNED}), _A.EXPIRED, "its time limit passed"),
    ],
    writers=["annotation.services.engine", "annotation.services.submissions"],
    error=InvalidTransition,
)

_V = Assignment.ReviewStatus
# The review of a submission: awaiting review once submitted, then approved or rejected once.
ASSIGNMENT_REVIEW = StateMachine(
    name="submission",
    field="review_status",
    statuses=_V.values,
    initial=[_V.NONE],
    transitions=[
        Transition("submit", frozenset({_V.NONE}), _V.SUBMITTED, "submitted work awaits review"),
        Transition("approve", frozenset({_V.SUBMITTED}), _V.APPROVED, "the researcher (or the payout) approves it"),
        Transition("reject", frozenset({_V.SUBMITTED}), _V.REJECTED, "rejected: its judgment stops counting"),
    ],
    writers=["annotation.services.submissions", "annotation.services.review"],
    error=InvalidTransition,
    refused="a submission that is {current} cannot {action}",
)

_C = Assignment.Confirmation
# What the worker's provider says about the assignment. Confirmed is final; a submission first judged
# unknown to the provider still counts if the provider later shows it (e.g. a listing that lagged).
ASSIGNMENT_CONFIRMATION = StateMachine(
    name="assignment",
    field="confirmation",
    statuses=_C.values,
    # A worker logged in to the platform is who they say; a provider's worker waits for the provider.
    initial=[_C.CONFIRMED, _C.UNCONFIRMED],
    transitions=[
        Transition("confirm", frozenset({_C.UNCONFIRMED, _C.FORGED}), _C.CONFIRMED, "the provider shows the work"),
        Transition("forge", frozenset({_C.UNCONFIRMED}), _C.FORGED, "the provider does not know the work"),
    ],
    writers=["annotation.services.engine", "annotation.services.confirmation"],
    error=InvalidTransition,
    refused="an assignment that is {current} cannot {action}",
)


class ConsentDecision(models.Model):
    """A worker's answer to a round's study information: accepted or refused, for the text they read.

    Written only by ``annotation.consent``. A decision covers the text it was given for (its hash):
    once the researcher changes the text, the worker is asked again.
    """

    round = models.ForeignKey(CollectionRound, on_delete=models.CASCADE, related_name="consent_decisions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="consent_decisions")
    accepted = models.BooleanField()
    text_sha256 = models.CharField(max_length=64, help_text="Hash of the consent text the worker answered.")
    decided_at = models.DateTimeField()

    class Meta:
        ordering = ["round_id", "decided_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "worker"], name="one_consent_decision_per_round_and_worker"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} {'accepted' if self.accepted else 'refused'} round {self.round_id}"


class ImageReport(models.Model):
    """A worker's report that an image of a task did not load; one per worker and image.

    Written only by ``annotation.image_reports``.
    """

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="image_reports")
    item = models.ForeignKey(WorkItem, on_delete=models.CASCADE, related_name="image_reports")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="image_reports"
    )
    image_url = models.CharField(max_length=2000, help_text="The image's address as the task page showed it.")
    reported_at = models.DateTimeField()

    class Meta:
        ordering = ["-reported_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["worker", "image_url"], name="one_image_report_per_worker_and_image"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} reported {self.image_url}"
