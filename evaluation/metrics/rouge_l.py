"""ROUGE-L F-measure (rouge-score). English goes through rouge-score's own tokenizer with the
Porter stemmer; Japanese through MeCab, since rouge-score's tokenizer drops non-Latin text."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from .base import Metric, MetricUnavailable
from .segmentation import mecab_segments


class _MecabTokenizer:
    """The tokenizer interface rouge-score expects: ``tokenize(text) -> list[str]``."""

    def tokenize(self, text: str) -> list[str]:
        return mecab_segments(text)


class RougeL(Metric):
    name = "rougeL"
    label = "ROUGE-L"

    @cached_property
    def _rouge_scorer(self):
        try:
            from rouge_score import rouge_scorer
        except ImportError:
            raise MetricUnavailable("ROUGE-L needs rouge-score: pip install -r requirements-metrics.txt") from None
        return rouge_scorer

    @cached_property
    def _english(self):
        return self._rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)

    @cached_property
    def _japanese(self):
        return self._rouge_scorer.RougeScorer(["rougeL"], tokenizer=_MecabTokenizer())

    def score_texts(self, candidates, references, languages):
        # rouge-score's argument order is (target, prediction).
        return np.array(
            [(self._japanese if language == "ja" else self._english).score(reference, candidate)["rougeL"].fmeasure
             for candidate, reference, language in zip(candidates, references, languages)],
            dtype=float,
        )

    def describe(self):
        return {**super().describe(), "library": "rouge-score", "measure": "F1",
                "tokenize": "rouge-score with Porter stemmer (ja: MeCab + IPAdic)"}
