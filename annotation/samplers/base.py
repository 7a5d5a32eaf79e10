"""What a pairwise sampler is given and returns."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from kernel.errors import ServiceError


class SamplerError(ServiceError):
    """The sampler cannot draw what was asked (e.g. more tuples than exist)."""

    status_code = 400


@dataclass(frozen=True)
class Candidates:
    """One instance as a sampler sees it: its outputs as (output id, model name), in model order,
    and whether it has an accepted reference."""

    instance_id: int
    outputs: tuple[tuple[int, str], ...]
    has_reference: bool = False


@dataclass(frozen=True)
class Pair:
    """One drawn tuple: side A is an output; side B another output, or the accepted reference
    when ``output_b`` is None."""

    instance_id: int
    output_a: int
    output_b: int | None


class PairSampler:
    name: ClassVar[str]
    label: ClassVar[str]
    # Whether the sampler needs ``count`` (how many tuples to draw).
    takes_count: ClassVar[bool] = False
    # Whether side B is the accepted reference (instances without one are left out).
    against_reference: ClassVar[bool] = False
    # Whether the sampler draws only a first batch and adds the rest as judgments arrive.
    adaptive: ClassVar[bool] = False

    def pairs(self, instances: list[Candidates], *, rng: random.Random, count: int | None) -> list[Pair]:
        raise NotImplementedError

    def start(self, *, round, params: dict, items: int) -> None:
        """Once the drawn pairs are the round's items: an adaptive sampler keeps its state on the round."""

    def on_item_completed(self, item) -> None:
        """An item of a round this sampler runs got its judgments (inside the submitting transaction)."""
