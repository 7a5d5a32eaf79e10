"""The task-type registry: the one place that lists what crowd tasks exist.

Adding a type is one module in this package and one line below (docs/crowd-work.md). Each type is
kept as one instance, found by its ``key``. ``REGISTRY.registered(TaskTypeClass)`` adds a type for
the length of a ``with`` block (tests, plug-ins loaded at run time) without touching this list.
"""
from __future__ import annotations

from kernel.registry import Registry

from .base import TaskType
from .caption import CaptionTask
from .instruction_generation import InstructionGeneration
from .pairwise import PairwiseTask
from .ranking import RankingTask
from .sources import ItemSource
from .verification import VerificationTask

REGISTRY: Registry[TaskType] = Registry("task type", name_of=lambda task_type: task_type.key,
                                        build=lambda task_type_class: task_type_class())
REGISTRY.register(InstructionGeneration)
REGISTRY.register(CaptionTask)
REGISTRY.register(VerificationTask)
REGISTRY.register(PairwiseTask)
REGISTRY.register(RankingTask)


def get_task_type(key: str) -> TaskType:
    return REGISTRY.get(key)


def task_type_choices() -> list[tuple[str, str]]:
    return [(key, str(task_type.label)) for key, task_type in REGISTRY.items()]


def task_types_yielding(kind: str) -> list[TaskType]:
    """The types whose judgments feed the evaluation read ``kind`` ("battles", "rankings", "verifications")."""
    return [task_type for _, task_type in REGISTRY.items() if task_type.yields == kind]


def task_type_keys_yielding(kind: str) -> list[str]:
    """The keys of ``task_types_yielding(kind)``: what a ``round__task_type__in`` filter takes."""
    return [task_type.key for task_type in task_types_yielding(kind)]


def round_type_for_stage(stage: str) -> tuple[TaskType, ItemSource] | None:
    """The task type, and its item source, that moves instances on from the pipeline stage ``stage`` (an
    instance status): the source that declares that ``stage``. None when the crowd does not act on it."""
    for _, task_type in REGISTRY.items():
        for source in task_type.item_sources:
            if source.stage == stage:
                return task_type, source
    return None


def stage_task_type(stage: str) -> TaskType:
    """``round_type_for_stage``'s task type, for callers that need one (the pipeline's follow-up rounds);
    a registry without one is a configuration error."""
    found = round_type_for_stage(stage)
    if found is None:
        raise LookupError(f"no task type declares an item source for the stage {stage!r}")
    return found[0]


def worker_answers(assignment) -> dict | None:
    """What a worker is told back about their submission: their answers in the terms their page used
    (the task type's ``answers``); None before they submit. The one place worker responses get it."""
    if assignment.payload is None:
        return None
    return get_task_type(assignment.round.task_type).answers(assignment)
