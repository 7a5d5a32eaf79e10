"""The round builder: plan a round's items from an item source, then create the round with them.

A task type declares where its items can come from (``TaskType.item_sources``; pairwise draws its
pairs through a sampler of ``annotation.samplers``). ``plan_items`` reads and writes nothing but
returns the items a source would give, with the balance per model and per instance for pairwise
plans, so a researcher sees them (and their cost, ``providers.services.estimate_plan_cost``) before
anything is created. ``add_items_from_source`` adds the same items to a round; a seed makes both
draw the same items. The cockpit pages and the researcher API call these functions.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from .errors import CrowdWorkError
from .models import CollectionRound, WorkItem
from .services.rounds import add_items, clone_round, create_round, edit_round
from .task_types import REGISTRY, get_task_type
from .task_types.sources import MAX_PLAN_ITEMS, MAX_SEED, BadItemSource, ItemSpec

class BadRoundSettings(CrowdWorkError):
    """The round's settings were refused; nothing was created."""

    status_code = 400


# How many planned items a preview shows.
PREVIEW_ITEMS = 20


@dataclass
class ItemPlan:
    task_type: str
    source: str
    specs: list[ItemSpec]
    params: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def balance(self) -> dict:
        """Items per model and per instance (pairwise: how often each model is judged, and where)."""
        return balance_of(self.specs)

    @property
    def summary(self) -> dict:
        return {"task_type": self.task_type, "source": self.source, "items": len(self.specs),
                "models": len(self.balance["per_model"]), "instances": len(self.balance["per_instance"]),
                **self.notes}

    def sample(self, size: int = PREVIEW_ITEMS) -> list[ItemSpec]:
        return self.specs[:size]

    def as_dict(self) -> dict:
        handler = get_task_type(self.task_type)
        return {
            "task_type": self.task_type,
            "source": self.source,
            "params": _plain(self.params),
            "summary": self.summary,
            "balance": {"per_model": self.balance["per_model"],
                        "per_instance": {str(key): value for key, value in self.balance["per_instance"].items()}},
            "items": [{"label": spec.label, "models": list(spec.models), "instance_id": spec.instance_id,
                       "targets": {column: target.pk for column, target in handler.target_columns(spec.target).items()}}
                      for spec in self.specs],
        }


def balance_of(specs: list[ItemSpec]) -> dict:
    per_model: Counter = Counter()
    per_instance: Counter = Counter()
    for spec in specs:
        per_model.update(spec.models)
        if spec.instance_id is not None and spec.models:
            per_instance[spec.instance_id] += 1
    return {"per_model": dict(sorted(per_model.items())), "per_instance": dict(sorted(per_instance.items()))}


def round_balance(*, round: CollectionRound) -> dict:
    """The balance of a round's stored items, as ``ItemPlan.balance`` gives it for a plan."""
    handler = get_task_type(round.task_type)
    return balance_of([handler.describe(handler.target_of(item)) for item in items_with_targets(round)])


def describe_items(*, round: CollectionRound, items) -> list[tuple[WorkItem, ItemSpec]]:
    """(item, how it reads) for a page of a round's items."""
    handler = get_task_type(round.task_type)
    return [(item, handler.describe(handler.target_of(item))) for item in items]


def items_with_targets(round: CollectionRound):
    handler = get_task_type(round.task_type)
    return round.items.select_related(*handler.target_fields).order_by("position")


def sources_by_task_type() -> list[tuple[Any, list]]:
    """(task type, its item sources) for every registered type that has sources."""
    return [(handler, list(handler.item_sources)) for _key, handler in REGISTRY.items() if handler.item_sources]


def plan_items(*, project, task_type: str, source: str, params: dict | None, language: str | None = None) -> ItemPlan:
    """The items ``source`` would give a ``task_type`` round of ``project``; writes nothing.

    ``params`` are checked by the source's own form (a refusal names the field); a ``seed`` left
    empty is drawn and returned in ``plan.params``, so the same plan can be drawn again. ``language``
    is the round's (review sets are ranked per language; default English).
    """
    if project is None:
        raise BadItemSource("items come from a project; this round belongs to none")
    handler = get_task_type(task_type)
    item_source = handler.source(source)
    cleaned = item_source.clean_params(params)
    if "seed" in cleaned and cleaned["seed"] is None:
        cleaned["seed"] = random.SystemRandom().randrange(MAX_SEED)
    rng = random.Random(cleaned.get("seed", 0))
    result = item_source.plan(project=project, params=cleaned, language=language or "en", rng=rng)
    if not result.specs:
        raise BadItemSource(f"the {item_source.label.lower()} source gives no items for this project "
                            f"({item_source.description})")
    if len(result.specs) > MAX_PLAN_ITEMS:
        raise BadItemSource(f"the plan has {len(result.specs)} items, more than {MAX_PLAN_ITEMS}; "
                            "narrow it (models, instances, limit) or split the round")
    return ItemPlan(task_type=handler.key, source=item_source.key, specs=result.specs, params=cleaned,
                    notes=result.notes)


def add_items_from_source(*, round: CollectionRound, source: str, params: dict | None,
                          gold_answers: dict | None = None) -> ItemPlan:
    """Add the items of ``source`` to ``round`` (only objects of the round's project); all or nothing.

    ``gold_answers`` maps a planned item's number (1 = the first) to its expected result in item
    terms (e.g. ``{"3": {"winner": "b"}}``): those items become gold / attention-check items.
    """
    with transaction.atomic():
        locked = CollectionRound.objects.select_for_update().get(pk=round.pk)
        plan = plan_items(project=locked.project, task_type=locked.task_type, source=source, params=params,
                          language=locked.language)
        add_items(round=locked, targets=[spec.target for spec in plan.specs],
                           gold_answers=gold_by_index(gold_answers, items=len(plan)))
        get_task_type(locked.task_type).source(source).after_added(round=locked, params=plan.params, items=len(plan))
    return plan


def gold_by_index(gold_answers: Any, *, items: int) -> dict[int, dict]:
    """``{item number: expected result}`` (numbers from 1, as previews show them) as ``add_items`` takes it."""
    if not gold_answers:
        return {}
    if not isinstance(gold_answers, dict):
        raise BadItemSource("gold answers must be an object mapping item numbers to expected results")
    by_index = {}
    for number, expected in gold_answers.items():
        try:
            index = int(str(number)) - 1
        except ValueError:
            raise BadItemSource(f"gold answers: {str(number)[:20]!r} is not an item number") from None
        if not 0 <= index < items:
            raise BadItemSource(f"gold answers: there is no item {str(number)[:20]}; the plan has {items}")
        if not isinstance(expected, dict) or not expected:
            raise BadItemSource(f"gold answers: item {index + 1} needs its expected result as an object, "
                                'e.g. {"winner": "b"}')
        by_index[index] = expected
    return by_index


def _settings_refused(error: ValidationError) -> BadRoundSettings:
    if hasattr(error, "error_dict"):
        problems = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in error.message_dict.items())
    else:
        problems = " ".join(error.messages)
    return BadRoundSettings(f"round settings refused: {problems}")


@transaction.atomic
def create_round_from_source(*, project, created_by, settings: dict, source: str, params: dict | None,
                             gold_answers: dict | None = None) -> tuple[CollectionRound, ItemPlan]:
    """A draft round of ``project`` with ``settings`` (the ``services.rounds.create_round`` arguments) and the
    items of ``source``; nothing is kept when either is refused."""
    try:
        round = create_round(project=project, created_by=created_by, **settings)
    except ValidationError as error:
        raise _settings_refused(error) from None
    plan = add_items_from_source(round=round, source=source, params=params, gold_answers=gold_answers)
    return round, plan


def edit_draft(*, round: CollectionRound, settings: dict, source: str | None = None, params: dict | None = None,
               gold_answers: dict | None = None) -> tuple[CollectionRound, ItemPlan | None]:
    """Change a draft round's settings (the ``create_round`` arguments, as the builder's form gives
    them; the task type stays the round's) and, with ``source``, replace its items by the items of
    that source, as ``create_round_from_source`` makes them. Only a draft (``edit_round``: the
    round's state machine refuses the others, 409); nothing changes when anything is refused."""
    changes = dict(settings)
    task_type = changes.pop("task_type", round.task_type)
    if task_type != round.task_type:
        raise BadRoundSettings(f"a round's task type stays {round.task_type}; clone or build a new round instead")
    if source is None and gold_answers:
        raise BadItemSource("gold answers go with new items: choose an item source to replace the items, "
                            "or leave the gold answers empty")
    planned: list[ItemPlan] = []

    def replace_items(locked: CollectionRound) -> None:
        plan = plan_items(project=locked.project, task_type=locked.task_type, source=source, params=params,
                          language=locked.language)
        add_items(round=locked, targets=[spec.target for spec in plan.specs],
                  gold_answers=gold_by_index(gold_answers, items=len(plan)))
        get_task_type(locked.task_type).source(source).after_added(round=locked, params=plan.params, items=len(plan))
        planned.append(plan)

    try:
        edited = edit_round(round=round, changes=changes, items=replace_items if source is not None else None)
    except ValidationError as error:
        raise _settings_refused(error) from None
    return edited, (planned[0] if planned else None)


def clone(*, round: CollectionRound, created_by=None, name: str | None = None) -> CollectionRound:
    """A new draft with ``round``'s settings and items (``services.rounds.clone_round``); a setting or
    an item the checks refuse today is named, and nothing is created."""
    try:
        return clone_round(round=round, created_by=created_by, name=name)
    except ValidationError as error:
        raise _settings_refused(error) from None


def _plain(value):
    """JSON-friendly parameters (Decimals and the like as text)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


__all__ = ["BadItemSource", "BadRoundSettings", "ItemPlan", "add_items_from_source", "balance_of", "clone",
           "create_round_from_source", "describe_items", "edit_draft", "plan_items", "round_balance", "sources_by_task_type"]
