"""The task-type registry: the one place that lists what crowd tasks exist.

Adding a type is one module in this package and one line below (docs/crowd-work.md). ``registered``
adds a type for a while (tests, plug-ins loaded at run time) without touching this list.
"""
from __future__ import annotations

from contextlib import contextmanager

from .base import TaskType
from .caption import CaptionTask
from .instruction_generation import InstructionGeneration
from .pairwise import PairwiseTask
from .ranking import RankingTask
from .verification import VerificationTask

REGISTRY: dict[str, TaskType] = {}


def register(task_type_class: type[TaskType]) -> TaskType:
    """Add a task type; its ``key`` must be new."""
    if task_type_class.key in REGISTRY:
        raise ValueError(f"task type {task_type_class.key!r} is already registered")
    REGISTRY[task_type_class.key] = task_type_class()
    return REGISTRY[task_type_class.key]


def unregister(key: str) -> None:
    REGISTRY.pop(key, None)


@contextmanager
def registered(task_type_class: type[TaskType]):
    """The type is known inside the block and forgotten after it."""
    task_type = register(task_type_class)
    try:
        yield task_type
    finally:
        unregister(task_type_class.key)


register(InstructionGeneration)
register(CaptionTask)
register(VerificationTask)
register(PairwiseTask)
register(RankingTask)


def get_task_type(key: str) -> TaskType:
    try:
        return REGISTRY[key]
    except KeyError:
        raise LookupError(f"unknown task type {key!r}; known: {', '.join(sorted(REGISTRY))}") from None


def task_type_choices() -> list[tuple[str, str]]:
    return [(key, str(task_type.label)) for key, task_type in REGISTRY.items()]


def task_types_yielding(kind: str) -> list[TaskType]:
    """The types whose judgments feed the evaluation read ``kind`` ("battles", "rankings")."""
    return [task_type for task_type in REGISTRY.values() if task_type.yields == kind]


def worker_answers(assignment) -> dict | None:
    """What a worker is told back about their submission: their answers in the terms their page used
    (the task type's ``answers``); None before they submit. The one place worker responses get it."""
    if assignment.payload is None:
        return None
    return get_task_type(assignment.round.task_type).answers(assignment)
