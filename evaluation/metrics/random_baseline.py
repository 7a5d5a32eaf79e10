"""Random baseline: a seeded uniform score per candidate, blind to candidate and reference."""
from __future__ import annotations

import zlib

import numpy as np

from .base import Metric


class RandomBaseline(Metric):
    name = "random"
    label = "Random"
    reference_backed = False
    empty_score = None  # blind to the text: an empty candidate gets its draw like any other

    def score_texts(self, candidates, references, languages):
        # Its own stream per seed, so other metrics' tie-breaks never shift these draws.
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        return rng.random(len(candidates))

    def describe(self):
        return {**super().describe(), "seed": self.seed}
