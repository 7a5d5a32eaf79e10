"""BLEU-4 per sentence (sacrebleu): 13a tokenization, MeCab for Japanese; exponential smoothing and
effective n-gram order, as ``sacrebleu.sentence_bleu`` does, so short answers do not all score 0."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from .base import Metric, MetricUnavailable


class Bleu4(Metric):
    name = "bleu4"
    label = "BLEU-4"

    @cached_property
    def _sacrebleu(self):
        try:
            import sacrebleu
        except ImportError:
            raise MetricUnavailable("BLEU-4 needs sacrebleu: pip install -r requirements-metrics.txt") from None
        return sacrebleu

    def _scorer(self, language: str):
        tokenize = "ja-mecab" if language == "ja" else "13a"
        scorers = self.__dict__.setdefault("_scorers", {})
        if tokenize not in scorers:
            scorers[tokenize] = self._sacrebleu.metrics.BLEU(tokenize=tokenize, effective_order=True)
        return scorers[tokenize]

    def score_texts(self, candidates, references, languages):
        return np.array(
            [self._scorer(language).sentence_score(candidate, [reference]).score
             for candidate, reference, language in zip(candidates, references, languages)],
            dtype=float,
        )

    def describe(self):
        return {**super().describe(), "library": f"sacrebleu {self._sacrebleu.__version__}",
                "tokenize": "13a (ja: ja-mecab)", "smoothing": "exp"}
