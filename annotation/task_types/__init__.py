"""The task-type registry: the one place that lists what crowd tasks exist.

Adding a type is one module in this package and one line below (docs/crowd-work.md). Each type is
kept as one instance, found by its ``key``. ``REGISTRY.registered(TaskTypeClass)`` adds a type for
the length of a ``with`` block (tests, plug-ins loaded at run time) without touching this list.
"""
from __future__ import annotations

from crowdbench.registry import Registry

from .base import TaskType
from .caption import CaptionTask
from .instruction_generation import InstructionGeneration
from .pairwise import PairwiseTask
from .ranking import RankingTask
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
    """The types whose judgments feed the evaluation read ``kind`` ("battles", "rankings")."""
    return [task_type for _, task_type in REGISTRY.items() if task_type.yields == kind]


def worker_answers(assignment) -> dict | None:
    """What a worker is told back about their submission: their answers in the terms their page used
    (the task type's ``answers``); None before they submit. The one place worker responses get it."""
    if assignment.payload is None:
        return None
    return get_task_type(assignment.round.task_type).answers(assignment)
