"""Uniformly random (instance, model A, model B) tuples, as VisIT-Bench collected its pairwise
judgments: ``count`` distinct tuples drawn uniformly from all the possible ones."""
from __future__ import annotations

from itertools import combinations

from .base import Pair, PairSampler, SamplerError


class UniformTuples(PairSampler):
    name = "uniform"
    label = "Uniform random (instance, A, B) tuples"
    takes_count = True

    def pairs(self, instances, *, rng, count):
        every = [
            (candidates.instance_id, id_a, id_b)
            for candidates in instances
            for (id_a, _name_a), (id_b, _name_b) in combinations(candidates.outputs, 2)
        ]
        if count is None or count < 1:
            raise SamplerError("the uniform sampler needs a count of tuples to draw (at least 1)")
        if count > len(every):
            raise SamplerError(f"the uniform sampler was asked for {count} tuples; only {len(every)} distinct ones exist")
        drawn = []
        for instance_id, id_a, id_b in rng.sample(every, count):
            if rng.random() < 0.5:
                id_a, id_b = id_b, id_a
            drawn.append(Pair(instance_id, id_a, id_b))
        return drawn
