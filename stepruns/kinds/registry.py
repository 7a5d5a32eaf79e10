"""Kind name → step kind: the one place to add a kind of background step run (one line each)."""
from __future__ import annotations

from kernel.registry import Registry

from .base import StepKind

KINDS: Registry[StepKind] = Registry("step kind", build=lambda cls: cls())
KINDS.register("stepruns.kinds.references.GenerateReferences", name="generate_references")
KINDS.register("stepruns.kinds.references.RegenerateReferences", name="regenerate_references")
KINDS.register("stepruns.kinds.outputs.GenerateOutputs", name="generate_outputs")
KINDS.register("stepruns.kinds.review_generation.GenerateReviews", name="generate_reviews")
KINDS.register("stepruns.kinds.reviews.RankReviews", name="rank_reviews")
KINDS.register("stepruns.kinds.judge.JudgeOutputs", name="judge_outputs")
