"""Each model's output against the instance's accepted (human-verified) reference."""
from __future__ import annotations

from .base import Pair, PairSampler


class AgainstReference(PairSampler):
    name = "vs_reference"
    label = "Each model against the accepted reference"
    against_reference = True

    def pairs(self, instances, *, rng, count):
        return [
            Pair(candidates.instance_id, output_id, None)
            for candidates in instances
            if candidates.has_reference
            for output_id, _name in candidates.outputs
        ]
