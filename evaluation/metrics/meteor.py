"""METEOR (NLTK) with WordNet synonyms. WordNet comes from Debian's ``wordnet-base`` and
``wordnet-sense-index`` packages, copied into an NLTK data directory by
``python -m evaluation.metrics.wordnet_setup`` (``make install-dev`` runs it); nothing is
downloaded from NLTK's servers."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from .base import Metric, MetricUnavailable
from .segmentation import words


class Meteor(Metric):
    name = "meteor"
    label = "METEOR"

    @cached_property
    def _meteor_score(self):
        try:
            from nltk.corpus import wordnet
            from nltk.translate.meteor_score import meteor_score
        except ImportError:
            raise MetricUnavailable("METEOR needs nltk: pip install -r requirements-metrics.txt") from None
        try:
            wordnet.ensure_loaded()
        except LookupError:
            raise MetricUnavailable(
                "METEOR needs WordNet in an NLTK data directory: apt-get install wordnet-base "
                "wordnet-sense-index, then python -m evaluation.metrics.wordnet_setup"
            ) from None
        return meteor_score

    def score_texts(self, candidates, references, languages):
        meteor_score = self._meteor_score
        return np.array(
            [meteor_score([words(reference, language)], words(candidate, language))
             for candidate, reference, language in zip(candidates, references, languages)],
            dtype=float,
        )

    def describe(self):
        import nltk

        return {**super().describe(), "library": f"nltk {nltk.__version__}", "wordnet": "WordNet 3.0 (Debian)",
                "tokenize": "lower-cased words (ja: MeCab + IPAdic)"}
