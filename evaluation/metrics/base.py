"""What every text metric is: a name, a score per (candidate, reference, language), and a refusal.

A metric scores each candidate against the human-verified reference of its instance; in pairwise
use the higher score wins (``evaluation.core.metric_agreement`` breaks equal scores at random).
Metrics are plug-ins: one module each, found through ``evaluation.metrics.registry``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crowdbench.errors import ServiceError


class MetricUnavailable(ServiceError):
    """The metric cannot run here (a missing package, data file or model); the message says what to install."""

    status_code = 503


class Metric:
    """Base class; subclasses set ``name`` and ``label`` and implement ``score``."""

    name: str = ""
    label: str = ""
    # True when the score compares the candidate with the reference (all but length and random).
    reference_backed: bool = True

    def __init__(self, *, seed: int = 0, **options) -> None:
        self.seed = seed
        self.options = options

    def score(self, candidates: Sequence[str], references: Sequence[str], languages: Sequence[str]) -> np.ndarray:
        """One float per candidate, higher is better; ``references[i]`` and ``languages[i]`` belong to it."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What was used (library version, model, settings), written into reports."""
        return {"name": self.name, "label": self.label}


def check_lengths(candidates: Sequence[str], references: Sequence[str], languages: Sequence[str]) -> None:
    if not len(candidates) == len(references) == len(languages):
        raise ValueError("candidates, references and languages differ in length")
