"""What every task type declares; the engine, the pages, the dry run, the qualification tests and the
evaluation reads only talk to this interface (see docs/crowd-work.md, "Adding a task type")."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.files.base import File
from django.db.models import Q
from django.utils.translation import gettext as _

from djangokit.prepared import PreparedQuery
from djangokit.text_input import clean_text as clean_input_text
from kernel.input_checks import strict_int

if TYPE_CHECKING:
    from ..models import Assignment, CollectionRound, WorkItem
    from .sources import ItemSource, ItemSpec

def _build_counted_answers(field: str, item_id: int):
    from ..models import Assignment

    return Assignment.objects.counted().filter(item_id=item_id).values_list(field, flat=True)


_counted_answers = PreparedQuery(_build_counted_answers)

# The WorkItem columns a target may occupy; a type names the ones it uses in ``target_fields``.
TARGET_FIELDS = ("family", "instance", "candidate", "output_a", "output_b", "reference", "review_set")


class TaskType:
    key: ClassVar[str]
    label: ClassVar[str]
    # A template path, or any object with render(context) (a django Template), included in the page.
    template_name: ClassVar[Any]
    # The researcher's view of a submission in the review queue: a template path (or an object with
    # render(context)) given ``review``, the dict ``review_context`` returns. The default lists the
    # worker's answers only; each type shows what its worker saw.
    review_template_name: ClassVar[Any] = "annotation/review/answers.html"
    # The type's page script under static/, loaded after the shared annotation/work.js; None for none.
    script_name: ClassVar[str | None] = None
    # Short worker-facing instructions, marked for translation in each module.
    instructions: ClassVar[str]
    # The submission form: fields in, errors per field out (the API answers them under "errors").
    form_class: ClassVar[type[forms.Form]]
    # WorkItem columns this type's targets use; the others stay empty.
    target_fields: ClassVar[tuple[str, ...]]
    # For a type whose items have one target: its model (stored in the one column of target_fields).
    target_model: ClassVar[type | None] = None
    # Workers per item when the platform creates a round of this type itself (follow-up rounds).
    default_workers_per_item: ClassVar[int] = 1
    # The type of round a round of this type may name as its follow-up (VisIT-Bench chaining).
    follow_up_type: ClassVar[str | None] = None
    # What the evaluation reads and the release get from this type's judgments (``judgment_rows``):
    # "battles", "rankings", "verifications" or None. Readers ask for a kind (``task_types_yielding``),
    # never for a type by its key.
    yields: ClassVar[str | None] = None
    # Where items of this type can come from (``sources.ItemSource`` instances; the round builder).
    item_sources: ClassVar[tuple[ItemSource, ...]] = ()
    # Whether rounds of this type may use adaptive overlap (its judgments have a ``quality_label``).
    adaptive_overlap: ClassVar[bool] = False
    # Whether the page records paste events and typing time (free-text tasks).
    records_typing: ClassVar[bool] = False
    # Rows the task page reads through the targets (``select_related`` paths from the item), loaded
    # with the item when a task is handed out; many-valued relations (images) are not joinable.
    shown_with_item: ClassVar[tuple[str, ...]] = ()

    # --- items ---------------------------------------------------------------------------------

    def make_item(self, *, round: CollectionRound, target: Any, position: int) -> WorkItem:
        """An unsaved WorkItem of ``round`` pointing at ``target``; its ``full_clean`` runs ``check_item``."""
        from ..models import WorkItem

        return WorkItem(round=round, position=position, **self.target_columns(target))

    def target_columns(self, target: Any) -> dict:
        """The WorkItem columns for ``target``; raises ValidationError when it is not one this type takes.

        Types with one target (``target_model``) need not override this."""
        if self.target_model is None:
            raise NotImplementedError
        if not isinstance(target, self.target_model):
            raise ValidationError(f"{self.key} items are {self.target_model._meta.verbose_name_plural}")
        return {self.target_fields[0]: target}

    def source(self, key: str) -> ItemSource:
        """The item source ``key`` of this type; another name is refused with the known ones."""
        from .sources import BadItemSource

        for source in self.item_sources:
            if source.key == key:
                return source
        known = ", ".join(source.key for source in self.item_sources) or "(none)"
        raise BadItemSource(f"a {self.key} round cannot be filled from {str(key)[:60]!r}; its sources: {known}")

    def target_of(self, item: WorkItem) -> Any:
        """The target a stored item was made from (the inverse of ``target_columns``)."""
        if self.target_model is None:
            raise NotImplementedError
        return getattr(item, self.target_fields[0])

    def describe(self, target: Any) -> ItemSpec:
        """How a target reads in a round's preview and item list; pairwise adds its models."""
        from .sources import ItemSpec

        instance_id = getattr(target, "instance_id", None)
        return ItemSpec(target=target, label=str(target), instance_id=instance_id)

    def check_item(self, item: WorkItem) -> None:
        """Refuse (ValidationError keyed by column) an item whose targets do not fit this type, and fill
        what is derived from the targets (e.g. pairwise side names)."""
        errors = {}
        for name in TARGET_FIELDS:
            present = getattr(item, f"{name}_id") is not None
            if present and name not in self.target_fields:
                errors[name] = _("A %(type)s item does not take this target.") % {"type": self.label}
        if errors:
            raise ValidationError(errors)
        self.check_targets(item)

    def check_targets(self, item: WorkItem) -> None:
        """Type-specific checks of the item's targets (only columns of ``target_fields`` are set).

        By default a one-target type needs its target; types that check more call this first."""
        if self.target_model is not None and getattr(item, f"{self.target_fields[0]}_id") is None:
            raise ValidationError({self.target_fields[0]: _("A %(type)s item needs a %(target)s.") % {
                "type": self.label, "target": self.target_model._meta.verbose_name}})

    # --- the page and the submission -----------------------------------------------------------

    def present(self, *, item: WorkItem, rng: random.Random) -> dict:
        """What is randomised per assignment (side order, review order); recorded on the assignment."""
        return {}

    def context(self, assignment: Assignment) -> dict:
        """Plain data (texts, image URLs) for the page and the API; never pre-escaped HTML."""
        raise NotImplementedError

    def form_kwargs(self, assignment: Assignment) -> dict:
        """Extra arguments of ``form_class`` for this assignment (e.g. the expected number of captions)."""
        return {}

    def validate(self, *, assignment: Assignment, data: Any, files: Any) -> dict:
        """The JSON payload to store, with uploads under keys starting with "_" (not stored).

        Raises ValidationError with worker-readable messages keyed by field.
        """
        data = require_dict(data)
        files, data = split_uploads(data, files)
        form = self.form_class(data=data, files=files, **self.form_kwargs(assignment))
        if not form.is_valid():
            raise ValidationError(
                {field: list(errors) for field, errors in form.errors.items()}
            )
        return self.payload(assignment, form.cleaned_data)

    def payload(self, assignment: Assignment, cleaned: dict) -> dict:
        return dict(cleaned)

    def result(self, assignment: Assignment) -> dict:
        """The stored payload in item terms (e.g. winner "a"/"b"); gold items are checked on this."""
        return {}

    def answers(self, assignment: Assignment) -> dict:
        """The stored submission in the terms the worker's page used (shown ids, left/right): what a
        worker is told back after submitting. Never ``result``, which names item sides and targets."""
        return dict(assignment.payload or {})

    def history_answers(self, assignments: list[Assignment]) -> dict[int, dict]:
        """Submitted assignments' answers as an item's history shows them to a researcher (the data
        browser), by assignment id: ``answers`` unless a type has words that read better there."""
        return {assignment.pk: self.answers(assignment) for assignment in assignments}

    def review_context(self, assignment: Assignment) -> dict:
        """A submitted assignment as its worker saw it (``context``: texts in the order shown) and what
        they answered, for the researcher's review; plain data, escaped by the review template."""
        return {"task": self.context(assignment), "answers": self.answers(assignment)}

    # --- the researcher's review queue ---------------------------------------------------------

    def review_choices(self, submissions) -> list[tuple[str, str]]:
        """The worker's one choice, as the review queue filters and exports it: (value, label) for
        the choices made among ``submissions`` (this type's submitted assignments). None for types
        whose answers are not one choice."""
        return []

    def review_choice_filter(self, value: str) -> Q:
        """The ``Assignment`` condition of the choice ``value`` (one of ``review_choices``)."""
        return Q(pk__in=[])

    def review_choice(self, assignment: Assignment) -> str:
        """The submission's choice as ``review_choices`` names it; "" for types without one."""
        return ""

    def apply(self, assignment: Assignment, *, uploads: dict) -> None:
        """Effects on the benchmark data of an accepted submission. Of the assignment itself it may set
        ``result`` only: the submission writes back just the fields it sets."""

    # --- completion ----------------------------------------------------------------------------

    def aggregate(self, item: WorkItem) -> dict | None:
        """Called when the item has all its judgments (and again when one of them is rejected later);
        returns the stored aggregate."""
        return None

    @staticmethod
    def counted_answers(item: WorkItem, field: str) -> list:
        """``field`` (``result`` or ``payload``) of each of the item's counted judgments, in the order
        assignments are listed: what an aggregation reads, compiled once (every completion reads it)."""
        return _counted_answers.all(field, item_id=item.pk)

    def on_completed(self, item: WorkItem) -> None:
        """The follow-up stage once the item completed and its aggregate is stored; runs inside the
        submitting transaction and must not fail the worker's submission."""

    def on_reopened(self, item: WorkItem) -> None:
        """The item is open again after a rejected judgment: undo what completion decided."""

    def settled_items(self) -> Q | None:
        """Open items of this type whose question another item has already answered (a condition on
        ``WorkItem``): the engine hands out no task on them and the work list does not count them.
        None when every open item still wants its judgments."""
        return None

    # --- dry runs, gold and qualification questions ---------------------------------------------

    def simulate(self, *, assignment: Assignment, rng: random.Random, accuracy: float) -> dict:
        """The answers of a simulated worker, as the page would post them (uploads as File values);
        on a gold item the right answer with probability ``accuracy``."""
        raise NotImplementedError

    def quality_label(self, assignment: Assignment) -> str | None:
        """The judgment as one categorical label (e.g. the pairwise winner), for agreement with the
        majority and Dawid–Skene reliability; None for types whose answers are not one choice."""
        return None

    def written_texts(self, assignment: Assignment) -> list[str]:
        """The free texts the worker wrote (checked for near-duplicates); none by default."""
        return []

    def machine_texts(self, item: WorkItem) -> list[tuple[str, str]]:
        """(source, text) of LLM outputs for the same item, which a worker's text must not copy."""
        return []

    def gold_feedback(self, assignment: Assignment) -> str:
        """What a worker is told after answering a gold item of a qualifying round, in the terms
        their page used; types with a nameable right answer say which it was."""
        return _("Your answer was right.") if assignment.gold_passed else _("Your answer was not right.")

    def gold_question(self, item: WorkItem) -> dict | None:
        """A multiple-choice question from a gold item, for qualification tests:
        {"text", "choices": [(value, label)], "expected"}; None when the item has no choice to score."""
        return None

    # --- watching a round ----------------------------------------------------------------------

    # The WorkItem lookup of the name an item counts under in the round watch's coverage (its
    # instruction family, or a review set's category); None when the type's items have none.
    coverage_lookup: ClassVar[str | None] = None

    def agreement_so_far(self, round: CollectionRound) -> dict | None:
        """What agreement means for this type and where the round stands, from its counted judgments:
        ``{"label", "measures": [{"label", "value"}], "levels": [{"level", "count"}]}`` (plain data for
        the watch page and its JSON); None when the type has no notion of agreement."""
        return None

    # --- evaluation reads ----------------------------------------------------------------------

    def judgment_queryset(self, assignments):
        """``assignments`` with what ``judgment_rows`` reads joined in."""
        return assignments

    def judgment_rows(self, assignment: Assignment) -> list[dict]:
        """Rows this judgment contributes to the evaluation reads named by ``yields``."""
        return []

    def judgment_table(self, assignments) -> list[dict]:
        """The rows of all these judgments, in their order: ``judgment_rows`` of each. A type with
        many judgments overrides it to read the same rows in bulk."""
        rows = []
        for assignment in self.judgment_queryset(assignments):
            rows.extend(self.judgment_rows(assignment))
        return rows


def majority_agreement(*, label: str, unit: str, votes: list[tuple[int, int, str]]) -> dict:
    """``agreement_so_far`` for types whose judgments are votes on one choice per item: the majority
    levels (5/5, 4/5, 3/5 …) and the workers' agreement with the majority (``votes``: item, worker,
    choice), computed by the pairwise-agreement core."""
    from stats.pairwise_agreement import majority_vote_arrays

    if not votes:
        return {"label": label, "measures": [{"label": f"{unit} judged", "value": 0}], "levels": []}
    items, workers, choices = zip(*votes)
    result = majority_vote_arrays(list(items), [str(choice) for choice in choices], list(workers))
    pairs, per_worker = result.pairs, result.workers
    scored = int(per_worker["scored_votes"].sum())
    return {
        "label": label,
        "measures": [
            {"label": f"{unit} judged", "value": len(pairs)},
            {"label": f"{unit} with a majority", "value": int((~pairs["tie"]).sum())},
            {"label": "Votes agreeing with the majority",
             "value": (int(per_worker["agreements"].sum()) / scored) if scored else None, "percent": True},
        ],
        "levels": [{"level": str(level), "count": int(count)} for level, count in result.level_counts().items()
                   if count],
    }


def require_dict(data: Any) -> Any:
    if not hasattr(data, "get") or not hasattr(data, "keys"):
        raise ValidationError({NON_FIELD_ERRORS: [_("The submission must be a JSON object or a form.")]})
    return data


def split_uploads(data: Any, files: Any) -> tuple[dict, Any]:
    """(files, data): in-process callers (the dry run) may pass uploads as File values inside ``data``."""
    files = dict(files.items()) if files else {}
    in_data = {key: value for key, value in data.items() if isinstance(value, File)}
    if not in_data:
        return files, data
    files.update(in_data)
    return files, {key: value for key, value in data.items() if key not in in_data}


# --- form fields shared by the task types' forms ----------------------------------------------


class TextField(forms.CharField):
    """A stripped text that must really be text (a JSON number or object is refused, not stringified).

    The one text check (``djangokit.text_input``) refuses control characters and lone surrogates,
    and text made only of invisible characters counts as empty.
    """

    def to_python(self, value):
        if value not in self.empty_values and not isinstance(value, str):
            raise ValidationError(_("This must be text."), code="invalid")
        value = super().to_python(value)
        if value:
            # Length is the CharField's own validator; here only the characters are checked.
            value = clean_input_text(value, label=str(self.label or _("This text")), max_length=len(value),
                                     required=False)
        return value


class StrictIntegerField(forms.IntegerField):
    """An integer id: JSON must carry a real integer (3.9, "3" and true are refused); a form post can
    only carry text, so there plain digits are accepted (``allow_digit_strings``, set per request)."""

    allow_digit_strings = True

    def to_python(self, value):
        if value in self.empty_values:
            return None
        number = strict_int(value, allow_digit_strings=self.allow_digit_strings)
        if number is None:
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class ListWidget(forms.Widget):
    """Reads a list from a form (repeated keys) or from JSON (a list value)."""

    from_form = True

    def value_from_datadict(self, data, files, name):
        self.from_form = hasattr(data, "getlist")
        if self.from_form:
            return data.getlist(name)
        return data.get(name)


class ListField(forms.Field):
    """A list of values, each cleaned by ``base_field``; errors name the position (1-based)."""

    widget = ListWidget

    def __init__(self, *, base_field: forms.Field, item_label: str = "", **kwargs):
        self.base_field = base_field
        self.item_label = item_label
        super().__init__(**kwargs)

    def clean(self, value):
        if value in (None, ""):
            value = []
        if not isinstance(value, (list, tuple)):
            raise ValidationError(self.error_messages.get("invalid_list", _("This must be a list.")), code="invalid")
        if not value and self.required:
            raise ValidationError(self.error_messages["required"], code="required")
        if isinstance(self.base_field, StrictIntegerField):
            self.base_field.allow_digit_strings = self.widget.from_form
        cleaned, errors = [], []
        for number, element in enumerate(value, start=1):
            try:
                cleaned.append(self.base_field.clean(element))
            except ValidationError as error:
                label = self.item_label % {"n": number} if self.item_label else str(number)
                for problem in error.error_list:
                    if problem.code == "required":
                        errors.append(_("%(field)s is empty.") % {"field": label})
                    else:
                        errors.append(f"{label}: {' '.join(problem.messages)}")
        if errors and "invalid_item" in self.error_messages:
            raise ValidationError(self.error_messages["invalid_item"], code="invalid")
        if errors:
            raise ValidationError(errors)
        return cleaned


class StrictBooleanField(forms.Field):
    """true/false (JSON booleans, or form words such as on/off); anything else is an error."""

    TRUE = {"true", "1", "on", "yes"}
    FALSE = {"false", "0", "off", "no", ""}

    def to_python(self, value):
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        if isinstance(value, str) and value.lower() in self.TRUE | self.FALSE:
            return value.lower() in self.TRUE
        raise ValidationError(_("This must be true or false."), code="invalid")

    def validate(self, value):
        pass


# --- views shared by the task types' contexts -------------------------------------------------


def clean_text(data: Any, name: str, *, label: str, max_length: int = 5000, required: bool = True) -> str:
    """A stripped text field; ``label`` is the already translated field name for messages."""
    return clean_input_text(data.get(name, ""), label=label, max_length=max_length, required=required)


def image_view(image) -> dict:
    return {"url": image.display_url, "license": image.license, "creator": image.creator,
            "source_url": image.source_url}


def instance_view(instance) -> dict:
    """The instance as pages show it: instruction, family and ordered images."""
    return {
        "instruction": instance.instruction,
        "family": instance.family.name,
        "images": [image_view(image) for image in instance.ordered_images()],
    }


def current_captions(instance) -> list[str]:
    from datasets_app.models import Caption

    return list(
        instance.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED, is_current=True)
        .order_by("position")
        .values_list("text", flat=True)
    )


def gold_choice(*, rng: random.Random, accuracy: float, choices: list, expected: Any) -> Any:
    """A simulated worker's choice: ``expected`` with probability ``accuracy`` (when it is one of
    ``choices``), otherwise another choice; a random one when nothing is expected."""
    if expected not in choices:
        return rng.choice(choices)
    if rng.random() < accuracy:
        return expected
    return rng.choice([choice for choice in choices if choice != expected])
