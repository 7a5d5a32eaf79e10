"""Pairwise samplers: how the pairwise source draws (instance, side A, side B) tuples from the model
outputs of a project's instances. One module per sampler and one line below; the pairwise task
type's item source finds them here by name and knows none of them.

Samplers are pure Python (no Django import): they see instances as ``Candidates`` and return
``Pair`` tuples, drawing any randomness from the seeded ``random.Random`` they are given. An
adaptive sampler (``adaptive``) also keeps state on its round and adds pairs as judgments arrive:
its round-side work imports Django lazily, in its hooks (``start``, ``on_item_completed``).
"""
from __future__ import annotations

from kernel.registry import Registry

from .base import Candidates, Pair, PairSampler, SamplerError

SAMPLERS: Registry[PairSampler] = Registry("pairwise sampler", build=lambda sampler_class: sampler_class())
SAMPLERS.register("annotation.samplers.all_pairs.AllPairs", name="all_pairs")
SAMPLERS.register("annotation.samplers.uniform.UniformTuples", name="uniform")
SAMPLERS.register("annotation.samplers.vs_reference.AgainstReference", name="vs_reference")
SAMPLERS.register("annotation.samplers.adaptive.AdaptivePairs", name="adaptive")


def get_sampler(name: str) -> PairSampler:
    return SAMPLERS.get(name)


__all__ = ["SAMPLERS", "Candidates", "Pair", "PairSampler", "SamplerError", "get_sampler"]
