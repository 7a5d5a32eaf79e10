"""Perplexity of review texts from an OpenAI-compatible completions server (vLLM and the like).

Each review is sent on its own as ``prefix + review`` to ``/v1/completions`` with ``echo`` and
``logprobs``, which makes the server return the log-probability of every prompt token together with
each token's character offset. Only the review's tokens count, as in the local ranker: a token
belongs to the review when it ends after the prefix does (a token that merges the prefix's last
space with the review's first word is the review's first word). The very first prompt token has no
log-probability (nothing precedes it) and any generated token lies past the prompt; neither is
scored. Lower perplexity is better.

Every request of a call goes through one ``run_batch`` (cache, budget, accounting). An item with
a failed call or an unusable answer for any of its reviews is reported in ``unscored`` and left
out; it never stops the others.
"""
from __future__ import annotations

from collections.abc import Sequence

from llm.calls import LLMResult
from llm.client import completion_request, run_batch
from llm.params import LLMRunParams

from .base import PERPLEXITY_PREFIX_VERSION, PERPLEXITY_PREFIXES, PerplexityPrefixes, ReviewItem, Unscored, scores_frame
from .local_perplexity import perplexity_from_log_probs

PURPOSE = "irr_perplexity"


class PromptLogprobsError(ValueError):
    """The server's answer does not carry usable prompt-token log-probabilities."""


def review_log_probs(logprobs: dict | None, *, prefix_length: int, prompt_length: int) -> list[float]:
    """The log-probabilities of the review's tokens in an echoed completions ``logprobs`` object."""
    if not isinstance(logprobs, dict):
        raise PromptLogprobsError("the answer has no logprobs (does the server support echo with logprobs?)")
    tokens, values, offsets = (logprobs.get(key) for key in ("tokens", "token_logprobs", "text_offset"))
    if not (isinstance(tokens, list) and isinstance(values, list) and isinstance(offsets, list)) or not (
        len(tokens) == len(values) == len(offsets)
    ):
        raise PromptLogprobsError("logprobs lacks matching tokens, token_logprobs and text_offset lists")
    selected = []
    for position, (value, start) in enumerate(zip(values, offsets)):
        if start >= prompt_length:
            break  # generated after the prompt (max_tokens > 0)
        # A token ends where the next begins; the last one ends with the prompt.
        end = offsets[position + 1] if position + 1 < len(offsets) else prompt_length
        if end <= prefix_length or value is None:
            continue
        selected.append(float(value))
    if not selected:
        raise PromptLogprobsError("no review token has a log-probability (was the prompt echoed?)")
    return selected


class PromptLogprobsRanker(PerplexityPrefixes):
    """What the rankers that score reviews by prompt log-probabilities from an OpenAI-compatible
    server share: the model, the run (cache, budget, accounting) and the progress callbacks."""

    uses_llm = True
    needs_scores_file = False
    # Recorded with every score: which prefix wording and which way of asking produced it.
    prompt_version_label = ""

    @classmethod
    def from_options(cls, options):
        return cls(llm=options.llm_params())

    def __init__(self, *, prefixes: dict[str, str] | None = None, llm: LLMRunParams = LLMRunParams()):
        self.llm = llm
        self.model = llm.model
        self.model_name = llm.model or (llm.client.config.model if llm.client else "") or ""
        self.prefixes = prefixes or PERPLEXITY_PREFIXES
        self.prompt_version = f"{self.prompt_version_label}@{PERPLEXITY_PREFIX_VERSION}"
        self.unscored: list[Unscored] = []


class ServerPerplexityRanker(PromptLogprobsRanker):
    kind = "server-perplexity"
    prompt_version_label = "perplexity-prefix"

    def __init__(self, *, logprobs: int = 1, max_tokens: int = 1, **common):
        # max_tokens=1 by default: some servers refuse 0; the one generated token is not scored.
        super().__init__(**common)
        self.logprobs = logprobs
        self.max_tokens = max_tokens

    def requests_for(self, items: Sequence[ReviewItem]):
        return [
            completion_request(
                self.prefix_for(item.language) + text, model=self.model, purpose=PURPOSE, echo=True,
                logprobs=self.logprobs, max_tokens=self.max_tokens, temperature=0,
            )
            for item in items
            for _, text in item.reviews
        ]

    def score_items(self, items: Sequence[ReviewItem]):
        requests = self.requests_for(items)  # unknown languages fail here, before anything is sent
        if self.llm.on_requests is not None:
            self.llm.on_requests(len(requests))
        results = run_batch(requests, run=self.llm.run, progress=self.llm.progress, client=self.llm.client)
        if not self.model_name and results:
            self.model_name = results[0].model
        rows, self.unscored = [], []
        position = 0
        for item in items:
            prefix = self.prefix_for(item.language)
            item_results = results[position:position + len(item.reviews)]
            position += len(item.reviews)
            try:
                values = [
                    self._perplexity(result, prefix_length=len(prefix), prompt_length=len(prefix) + len(text))
                    for (_, text), result in zip(item.reviews, item_results)
                ]
            except PromptLogprobsError as error:
                self.unscored.append(Unscored(item.item_id, str(error)))
                continue
            rows.extend((item.item_id, item.language, review_id, value)
                        for (review_id, _), value in zip(item.reviews, values))
        return scores_frame(self.model_name, rows)

    @staticmethod
    def _perplexity(result: LLMResult, *, prefix_length: int, prompt_length: int) -> float:
        if not result.ok:
            raise PromptLogprobsError(f"the request failed ({result.status}): {result.error}")
        return perplexity_from_log_probs(
            review_log_probs(result.logprobs, prefix_length=prefix_length, prompt_length=prompt_length)
        )
