"""What every text metric is: a name, a score per (candidate, reference, language), and a refusal.

A metric scores each candidate against the human-verified reference of its instance; in pairwise
use the higher score wins (``stats.metric_agreement`` breaks equal scores at random).
Metrics are plug-ins: one module each, found through ``evaluation.metrics.registry``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernel.errors import ServiceError


class MetricUnavailable(ServiceError):
    """The metric cannot run here (a missing package, data file or model); the message says what to install."""

    status_code = 503


def is_empty_candidate(text: str) -> bool:
    """An empty model output: nothing but whitespace."""
    return not text.strip()


class Metric:
    """Base class; subclasses set ``name`` and ``label`` and implement ``score_texts``.

    ``score`` is the one entry point: it checks the inputs, lets the metric score every candidate
    and then gives each empty candidate (``is_empty_candidate``) the metric's ``empty_score``, so
    an empty model output has one defined score whatever the library would make of it.
    """

    name: str = ""
    label: str = ""
    # True when the score compares the candidate with the reference (all but length and random).
    reference_backed: bool = True
    # The score of an empty candidate: 0.0 (no overlap, no similarity, no tokens); None keeps the
    # metric's own score (the random baseline, which never looks at the text).
    empty_score: float | None = 0.0

    def __init__(self, *, seed: int = 0, **options) -> None:
        self.seed = seed
        self.options = options

    def score(self, candidates: Sequence[str], references: Sequence[str], languages: Sequence[str]) -> np.ndarray:
        """One float per candidate, higher is better; ``references[i]`` and ``languages[i]`` belong to it."""
        check_lengths(candidates, references, languages)
        candidates, references, languages = list(candidates), list(references), list(languages)
        # Every candidate goes to the metric, empty ones too: a set-level metric (CIDEr) weighs
        # n-grams over all the references, and the random baseline draws one number per candidate.
        scores = np.array(self.score_texts(candidates, references, languages), dtype=float)
        if self.empty_score is not None:
            scores[[is_empty_candidate(candidate) for candidate in candidates]] = self.empty_score
        return scores

    def score_texts(self, candidates: list[str], references: list[str], languages: list[str]) -> np.ndarray:
        """The metric's own scores, one per candidate (lists of equal length; empty candidates included)."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What was used (library version, model, settings), written into reports."""
        return {"name": self.name, "label": self.label}


def check_lengths(candidates: Sequence[str], references: Sequence[str], languages: Sequence[str]) -> None:
    if not len(candidates) == len(references) == len(languages):
        raise ValueError("candidates, references and languages differ in length")
