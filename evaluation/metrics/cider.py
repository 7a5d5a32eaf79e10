"""CIDEr (pycocoevalcap's pure-Python scorer; no Java, which only its PTB tokenizer needs).

CIDEr weighs n-grams by their inverse document frequency over the references of the scored set,
so a call scores all its candidates together: pass every output once (``evaluation.metrics.
agreement`` does), one reference each. Text is lower-cased and split into words without
punctuation (MeCab morphemes for Japanese) before scoring, in place of the Java tokenizer.
"""
from __future__ import annotations

import numpy as np

from .base import Metric, MetricUnavailable
from .segmentation import words


class Cider(Metric):
    name = "cider"
    label = "CIDEr"

    def score_texts(self, candidates, references, languages):
        try:
            from pycocoevalcap.cider.cider import Cider as CocoCider
        except ImportError:
            raise MetricUnavailable("CIDEr needs pycocoevalcap: pip install -r requirements-metrics.txt") from None
        if not candidates:
            return np.zeros(0)
        references_by_key = {
            index: [" ".join(words(reference, language))]
            for index, (reference, language) in enumerate(zip(references, languages))
        }
        candidates_by_key = {
            index: [" ".join(words(candidate, language))]
            for index, (candidate, language) in enumerate(zip(candidates, languages))
        }
        _mean, scores = CocoCider().compute_score(references_by_key, candidates_by_key)
        return np.asarray(scores, dtype=float)

    def describe(self):
        return {**super().describe(), "library": "pycocoevalcap 1.2 (CIDEr-D n=4, sigma=6)",
                "tokenize": "lower-cased words (ja: MeCab + IPAdic)"}
