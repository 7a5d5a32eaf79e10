"""The task-type registry: the one place that lists what crowd tasks exist."""
from __future__ import annotations

from .base import TaskType
from .caption import CaptionTask
from .instruction_generation import InstructionGeneration
from .pairwise import PairwiseTask
from .ranking import RankingTask
from .verification import VerificationTask

REGISTRY: dict[str, TaskType] = {
    task_type.key: task_type
    for task_type in (
        InstructionGeneration(),
        CaptionTask(),
        VerificationTask(),
        PairwiseTask(),
        RankingTask(),
    )
}


def get_task_type(key: str) -> TaskType:
    try:
        return REGISTRY[key]
    except KeyError:
        raise LookupError(f"unknown task type {key!r}; known: {', '.join(sorted(REGISTRY))}") from None


def task_type_choices() -> list[tuple[str, str]]:
    return [(key, str(task_type.label)) for key, task_type in REGISTRY.items()]
