"""Every pair of distinct models' outputs on every instance (a full round robin per instance)."""
from __future__ import annotations

from itertools import combinations

from .base import Pair, PairSampler


class AllPairs(PairSampler):
    name = "all_pairs"
    label = "All pairs per instance"

    def pairs(self, instances, *, rng, count):
        drawn = []
        for candidates in instances:
            for (id_a, _name_a), (id_b, _name_b) in combinations(candidates.outputs, 2):
                # Which output is side A is drawn, so no model is always A (the page randomises
                # left and right again per assignment).
                if rng.random() < 0.5:
                    id_a, id_b = id_b, id_a
                drawn.append(Pair(candidates.instance_id, id_a, id_b))
        return drawn
