"""Forms of the cockpit's project pages."""
from __future__ import annotations

from decimal import Decimal

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import MaxValueValidator, MinLengthValidator, MinValueValidator

from annotation.models import CollectionRound
from annotation.rule_labels import describe_rule
from annotation.watch import DEFAULT_COVERAGE_TARGET
from datasets_app.models import Language
from stats import irr
from evaluation.results import MAX_BOOTSTRAP_ROUNDS, METHODS, PAGE_BOOTSTRAP_ROUNDS, SOURCES
from llm.config import configured_models, missing_server_help
from projects.errors import ProjectError
from projects.permissions import is_researcher
from projects.models import RELEASE_NAME_VALIDATOR, VERSION_VALIDATOR, Membership, Project
from projects.services import check_slug_free_of_pages
from providers.registry import PROVIDERS
from stepruns.services import BUDGET_DECIMAL_PLACES, BUDGET_STEP

from .errors import BadQuery


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "slug", "description"]

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        try:
            check_slug_free_of_pages(slug)
        except ProjectError as error:
            raise forms.ValidationError(error.message) from None
        return slug


class MemberForm(forms.Form):
    """Adds a member or changes a role. Its ids (``member-username``) differ from the invitation's,
    shown on the same page; the field names, which the POST carries, stay plain."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.COLLABORATOR)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "member-%s")
        super().__init__(*args, **kwargs)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"No active user '{username}'.")
        if not is_researcher(user):  # a member who is not a researcher could not open the project's pages
            raise forms.ValidationError(f"'{username}' is not a researcher; ask an administrator to add them to "
                                        f"the '{settings.RESEARCHER_GROUP}' group first.")
        return user


class NewResearcherForm(forms.Form):
    """A researcher without an account yet: made here, a member at once, with a one-time link. Its
    ids (``invite-username``) differ from the member form's, shown on the same page."""

    username = forms.CharField(max_length=150, label="User name")
    email = forms.EmailField(required=False, label="Email (optional, for your records)")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.COLLABORATOR)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "invite-%s")
        super().__init__(*args, **kwargs)


class NewWorkerForm(forms.Form):
    """A local crowd worker made by an owner, with a one-time link to set their password."""

    username = forms.CharField(max_length=150, label="User name")
    languages = forms.MultipleChoiceField(choices=Language.choices, required=False,
                                          widget=forms.CheckboxSelectMultiple, label="Languages they work in")
    qualify = forms.BooleanField(required=False, initial=True, label="Qualified for this project's rounds")


class ConfiguredModelField(forms.ChoiceField):
    """One of the configured LLMs, as the settings stand when the form is shown or checked. With
    ``default_label``, also an empty choice so labelled, meaning the service's default model."""

    def __init__(self, *, default_label: str | None = None, **kwargs):
        def choices():
            named = [(name, name) for name in configured_models()]
            return named if default_label is None else [("", default_label), *named]

        super().__init__(choices=choices, required=default_label is None, **kwargs)
        self.error_messages["required"] = "Choose a model."

    def validate(self, value):
        if not value and self.required and not configured_models():
            raise forms.ValidationError(no_model_message(), code="no_model")
        super().validate(value)


def no_model_message() -> str:
    """What to configure when no model can be chosen, naming the settings."""
    return f"No LLM model is available: {missing_server_help()}"


class BudgetField(forms.DecimalField):
    """The most an LLM step may spend, in USD, as a step run keeps it (``StepRun.budget_usd``; the
    service checks it again with ``stepruns.services.clean_budget``)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=BUDGET_STEP, max_digits=12, decimal_places=BUDGET_DECIMAL_PLACES, **kwargs)


class RunForm(forms.Form):
    """What every background step run asks for: the model (among the configured ones) and a budget."""

    model = ConfiguredModelField()
    budget_usd = BudgetField(label="Budget (USD)", initial=Decimal("1.00"))


class UploadForm(forms.Form):
    file = forms.FileField()


class OptionalJSONField(forms.JSONField):
    """A JSON field whose empty value shows as an empty box, not ``null``."""

    def prepare_value(self, value):
        return "" if value is None else super().prepare_value(value)


def round_field(name: str, **overrides) -> forms.Field:
    """The form field of a ``CollectionRound`` field: its limits (validators), default, choices and
    lengths come from the model, the one place they are written."""
    field = CollectionRound._meta.get_field(name)
    limits = {}
    for validator in field.validators:  # the tightest bound wins (the database adds looser ones)
        if isinstance(validator, MinValueValidator):
            limits["min_value"] = max(limits.get("min_value", validator.limit_value), validator.limit_value)
        elif isinstance(validator, MaxValueValidator):
            limits["max_value"] = min(limits.get("max_value", validator.limit_value), validator.limit_value)
        elif isinstance(validator, MinLengthValidator):
            limits["min_length"] = validator.limit_value
    return field.formfield(**{**limits, **overrides})


class RoundSettingsForm(forms.Form):
    """The settings of a new round (the ``annotation.services.rounds.create_round`` arguments) and what its
    cost estimate assumes (provider, expected seconds per task)."""

    name = round_field("name")
    language = round_field("language")
    workers_per_item = round_field("workers_per_item")
    reward_per_task = round_field("reward_per_task")
    currency = round_field("currency")
    target_hourly_wage = round_field("target_hourly_wage")
    time_limit_seconds = round_field("time_limit_seconds")
    budget_cap = round_field("budget_cap", help_text="Empty means no cap.")
    instructions = round_field("instructions", widget=forms.Textarea(attrs={"rows": 2}),
                               help_text="Extra guidance shown to workers above the task's instructions.")
    min_approved_tasks = forms.IntegerField(required=False, min_value=0, label="Minimum approved tasks")
    max_tasks_per_worker = forms.IntegerField(required=False, min_value=0, label="Most tasks per worker")
    tasks_per_participant = forms.IntegerField(
        required=False, min_value=1, max_value=100, label="Tasks per Prolific participant",
        help_text="Tasks one participant does in one study session; the reward pays one, bonuses the rest. Empty: 1.")
    allowed_providers = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Workers from",
        choices=lambda: [(name, provider.label or name) for name, provider in PROVIDERS.items()],
        help_text="None checked: workers from every provider.")
    language_matched = forms.BooleanField(required=False, label="Only workers who list the round's language")
    gold_answers = OptionalJSONField(
        required=False, label="Gold items", widget=forms.Textarea(attrs={"rows": 2}),
        help_text='Item number (as the preview numbers them) → expected result, e.g. {"1": {"winner": "b"}}.')
    provider = forms.ChoiceField(choices=lambda: [(name, provider.label or name) for name, provider in PROVIDERS.items()],
                                 initial="local", help_text="For the cost estimate (fees); publishing is chosen at launch.")
    expected_seconds = forms.IntegerField(min_value=1, max_value=24 * 3600, initial=60, label="Expected seconds per task",
                                          help_text="For the expected wage and the top-ups the target wage needs.")

    QUALIFICATION_FIELDS = ("min_approved_tasks", "max_tasks_per_worker", "tasks_per_participant", "language_matched")

    def round_settings(self) -> dict:
        """The ``create_round`` arguments."""
        data = self.cleaned_data
        rules = {key: data[key] for key in self.QUALIFICATION_FIELDS if data[key] not in (None, False)}
        if data["allowed_providers"]:
            rules["providers"] = sorted(data["allowed_providers"])
        return {
            "name": data["name"], "task_type": self.task_type, "language": data["language"],
            "workers_per_item": data["workers_per_item"], "reward_per_task": data["reward_per_task"],
            "currency": data["currency"].upper(), "target_hourly_wage": data["target_hourly_wage"],
            "time_limit_seconds": data["time_limit_seconds"], "budget_cap": data["budget_cap"],
            "instructions": data["instructions"], "qualification_rules": rules,
            # Workers see this expected time on their work list until real task times exist.
            "estimated_seconds_per_task": data["expected_seconds"],
        }

    def __init__(self, *args, task_type: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.task_type = task_type

    @classmethod
    def initial_of(cls, round: CollectionRound) -> dict:
        """The form's values for a stored round (the inverse of ``round_settings``), to edit it."""
        rules = round.qualification_rules or {}
        initial = {name: getattr(round, name) for name in (
            "name", "language", "workers_per_item", "reward_per_task", "currency", "target_hourly_wage",
            "time_limit_seconds", "budget_cap", "instructions")}
        initial.update({key: rules.get(key) for key in cls.QUALIFICATION_FIELDS})
        initial["allowed_providers"] = list(rules.get("providers") or [])
        initial["expected_seconds"] = round.estimated_seconds_per_task or cls.base_fields["expected_seconds"].initial
        return initial


class CloneRoundForm(forms.Form):
    name = round_field("name", required=False, label="Name of the copy",
                       help_text="Empty: the round's name with “(copy)”.")


class ExtendRoundForm(forms.Form):
    time_limit_seconds = round_field("time_limit_seconds", required=False, initial=None,
                                     label="New time limit (seconds)", help_text="")
    budget_cap = round_field("budget_cap", label="New budget cap", help_text="")

    def clean(self):
        data = super().clean()
        if data.get("time_limit_seconds") is None and data.get("budget_cap") is None:
            raise forms.ValidationError("Give a longer time limit, a higher budget cap, or both.")
        return data


class WidenEligibilityForm(forms.Form):
    """The round's qualification rules that may be dropped to let more workers in."""

    rules = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, label="Drop these rules")

    def __init__(self, *args, round, **kwargs):
        from annotation.services.rounds import WIDENING_RULES

        super().__init__(*args, **kwargs)
        present = round.qualification_rules or {}
        self.fields["rules"].choices = [(rule, describe_rule(rule, present[rule], language=round.language))
                                        for rule in WIDENING_RULES if rule in present]


class PublishForm(forms.Form):
    provider = forms.ChoiceField(choices=lambda: [(name, provider.label or name) for name, provider in PROVIDERS.items()
                                                  if provider.recruits])
    expected_seconds = forms.IntegerField(min_value=1, max_value=24 * 3600, initial=60,
                                          label="Expected seconds per task")


class ConfirmPublishForm(PublishForm):
    dry_run = forms.CharField(widget=forms.HiddenInput)
    confirm = forms.BooleanField(required=True, error_messages={
        "required": "Tick the confirmation to publish: this spends money on the provider."})


# --- query parameters of the watch and results pages -------------------------------------------


def cleaned_query(form_class: type[forms.Form], query) -> dict:
    """The cleaned query parameters (defaults for absent ones), or a 400 naming each bad parameter."""
    form = form_class({key: query[key] for key in form_class.base_fields if key in query})
    if not form.is_valid():
        raise BadQuery("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
    return {name: value if value not in (None, "") else form_class.base_fields[name].initial
            for name, value in form.cleaned_data.items()}


class WatchQuery(forms.Form):
    target = forms.IntegerField(min_value=1, max_value=100_000, required=False, initial=DEFAULT_COVERAGE_TARGET)


class LeaderboardQuery(forms.Form):
    source = forms.ChoiceField(choices=list(SOURCES.items()), required=False, initial="human")
    method = forms.ChoiceField(choices=list(METHODS.items()), required=False, initial="elo")
    bootstrap = forms.IntegerField(min_value=1, max_value=MAX_BOOTSTRAP_ROUNDS, required=False,
                                   initial=PAGE_BOOTSTRAP_ROUNDS)
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, required=False, initial=0)


class IRRQuery(forms.Form):
    threshold = forms.FloatField(min_value=-1.0, max_value=1.0, required=False, initial=irr.DEFAULT_THRESHOLD)


class ReleaseForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[RELEASE_NAME_VALIDATOR],
                           help_text="Letters, digits, dots, dashes or underscores, e.g. visit-bench.")
    version = forms.CharField(max_length=64, initial="1.0.0", validators=[VERSION_VALIDATOR],
                              help_text="e.g. 1.0.0; a name and version are released once.")
