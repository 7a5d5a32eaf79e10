"""Length baseline: the number of non-whitespace tokens of the candidate (MeCab morphemes for
Japanese, which has no spaces). Ignores the reference."""
from __future__ import annotations

import numpy as np

from .base import Metric
from .segmentation import mecab_segments


class Length(Metric):
    name = "length"
    label = "Length"
    reference_backed = False

    def score_texts(self, candidates, references, languages):
        return np.array(
            [len(mecab_segments(candidate)) if language == "ja" else len(candidate.split())
             for candidate, language in zip(candidates, languages)],
            dtype=float,
        )

    def describe(self):
        return {**super().describe(), "tokens": "whitespace-separated (ja: MeCab morphemes)"}
