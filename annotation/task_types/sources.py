"""Item sources: where a task type's work items can come from (a project's families, instances
awaiting a caption, reference candidates, model outputs, review sets).

Each task type declares its sources in ``item_sources``; the round builder
(``annotation.round_builder``) plans and adds items through them and knows none by name. A source
reads only objects of the project it is given, checks its parameters with its own form
(``params_form``) and returns the targets in the order they become items.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from kernel.errors import ServiceError

# A plan larger than this is refused: split the round (an all-pairs round of many models grows fast).
MAX_PLAN_ITEMS = 20_000
# Seeds are drawn from this range when none is given.
MAX_SEED = 2**31 - 1


class BadItemSource(ServiceError):
    """The item source or its parameters were refused; nothing was written."""

    status_code = 400


@dataclass
class ItemSpec:
    """One planned item: its target (as ``TaskType.make_item`` takes it) and how it reads."""

    target: Any
    label: str
    models: tuple[str, ...] = ()
    instance_id: int | None = None


@dataclass
class SourceResult:
    specs: list[ItemSpec]
    # What the source decided beyond the items (the seed used, what was left out and why).
    notes: dict = field(default_factory=dict)


class ListOfValuesField(forms.Field):
    """A list, from JSON (a list) or from a form (one comma-separated text); empty means all."""

    def __init__(self, *, base_field: forms.Field, browse: str | None = None, **kwargs):
        self.base_field = base_field
        # Which of the project's data lists the values come from ("families", "instances", …): the
        # cockpit links the field to its data browser.
        self.browse = browse
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        if value in (None, ""):
            return []
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, (list, tuple)):
            raise ValidationError("This must be a list or comma-separated values.", code="invalid")
        cleaned = []
        for element in value:
            if isinstance(element, bool):
                raise ValidationError(f"{element!r} is not a valid value.", code="invalid")
            try:
                cleaned.append(self.base_field.clean(element))
            except ValidationError as error:
                raise ValidationError(f"{str(element)[:60]!r}: {' '.join(error.messages)}", code="invalid") from None
        return list(dict.fromkeys(cleaned))

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return ", ".join(str(element) for element in value)
        return value


def ids_field(label: str, help_text: str, *, browse: str | None = None) -> ListOfValuesField:
    return ListOfValuesField(base_field=forms.IntegerField(min_value=1), label=label, help_text=help_text,
                             browse=browse)


def seed_field() -> forms.IntegerField:
    return forms.IntegerField(
        required=False, min_value=0, max_value=MAX_SEED, label="Seed",
        help_text="The same seed draws the same items; empty draws a new one (shown with the preview).")


def limit_field(help_text: str = "At most this many items; empty for all.") -> forms.IntegerField:
    return forms.IntegerField(required=False, min_value=1, max_value=MAX_PLAN_ITEMS, label="Limit",
                              help_text=help_text)


class ItemSource:
    """Where items of one task type come from."""

    key: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    params_form: ClassVar[type[forms.Form]] = forms.Form
    # The pipeline stage this source moves on: the instance status (``datasets_app.instance_status``)
    # of the instances its items are made from, and the board's words for doing so. The pipeline and
    # the project board find a stage's round type through it (``round_type_for_stage``), never by name.
    stage: ClassVar[str | None] = None
    stage_action: ClassVar[str] = ""

    def clean_params(self, params: Any) -> dict:
        """The parameters checked by ``params_form``; a refusal names each field."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise BadItemSource(f"the parameters of the {self.key} source must be an object")
        unknown = sorted(set(params) - set(self.params_form.base_fields))
        if unknown:
            raise BadItemSource(
                f"unknown parameters of the {self.key} source: {', '.join(str(name)[:60] for name in unknown)}; "
                f"known: {', '.join(self.params_form.base_fields) or '(none)'}")
        form = self.params_form(data=params)
        if not form.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
            raise BadItemSource(f"parameters of the {self.key} source refused: {problems}")
        return form.cleaned_data

    def plan(self, *, project, params: dict, language: str, rng: random.Random) -> SourceResult:
        """The items to create, from objects of ``project`` only; ``params`` are already cleaned."""
        raise NotImplementedError

    def after_added(self, *, round, params: dict, items: int) -> None:
        """The planned items are now the round's (same transaction, round locked): a source whose
        items keep coming while the round runs records what it needs on the round."""


def only_known_ids(queryset, ids: list[int], *, what: str) -> Any:
    """``queryset`` narrowed to ``ids``; ids it does not hold (another project's, missing) are refused."""
    if not ids:
        return queryset
    found = set(queryset.filter(pk__in=ids).values_list("pk", flat=True))
    missing = [str(pk) for pk in ids if pk not in found]
    if missing:
        raise BadItemSource(f"no {what} with id {', '.join(missing[:20])} in this project")
    return queryset.filter(pk__in=ids)


def limited(specs: list[ItemSpec], limit: int | None) -> list[ItemSpec]:
    return specs[:limit] if limit else specs


def queued_targets(*, targets, task_type: str, column: str) -> set[int]:
    """Ids of ``targets`` (a queryset) that already wait in a ``task_type`` round: in ``column`` of an
    item not yet complete, in a round not closed or cancelled, whatever project that round has (rounds
    made before rounds took their project have none). A source leaves these out, so the same work is
    never queued, and paid, twice; a completed item holds nothing (its target may come back, e.g.
    re-captioned after a discard)."""
    from ..models import CollectionRound, WorkItem

    finished = (CollectionRound.Status.CLOSED, CollectionRound.Status.CANCELLED)
    return set(
        WorkItem.objects.filter(round__task_type=task_type, completed_at__isnull=True,
                                **{f"{column}__in": targets.order_by().values("pk")})
        .exclude(round__status__in=finished).values_list(f"{column}_id", flat=True)
    )
