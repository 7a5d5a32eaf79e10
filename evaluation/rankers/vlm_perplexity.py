"""Perplexity of each review given the image, from a vision-language model served by vLLM.

The IRR paper's Table 2 method: the model sees the image and the fixed prefix instruction, then
one review at a time, and the reviews are ranked by ascending perplexity of their own tokens.

vLLM's OpenAI-compatible chat endpoint returns the log-probability of every prompt token when the
request carries its extra parameter ``prompt_logprobs``: the answer gets a top-level
``prompt_logprobs`` list, one entry per prompt token (``null`` for the first, which nothing
precedes), each a dict ``{token_id: {"logprob", "rank", "decoded_token"}}`` whose first key is the
prompt's own token (``prompt_logprobs=0`` returns that token alone).

**Locating the review's tokens.** The chat template decides which tokens surround the review, so
we do not guess them from text. Per item and language, one *prefix request* holds the user turn
(image, then the prefix instruction) and asks for the assistant turn to be opened
(``add_generation_prompt``). Per review, a *review request* holds the same user turn and the review
as the final assistant message, left open (``continue_final_message``, ``add_generation_prompt``
off), so the prompt ends with the review's last token and no end-of-turn token follows. The review's
tokens are those of the review request from the first position where its token ids differ from the
prefix request's (when the prefix request is entirely a prefix of it, right after the assistant
header). A token that merges the header's end with the review's first characters therefore counts
as the review's, the convention of the other perplexity rankers. The prefix request is the same
for all reviews of an item, so it is sent (and paid for) once per item, and cached like the rest.

All requests of a call go through one ``run_batch`` (cache, budget, accounting). ``max_tokens`` is
1 (vLLM needs at least one); the generated token is not a prompt token and is never scored. An item
with a failed request, a missing image or an unusable answer is reported in ``unscored``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llm.client import LLMResult, chat_request, image_url, run_batch

from .base import ReviewItem, Unscored, scores_frame
from .local_perplexity import perplexity_from_log_probs
from .server_perplexity import PromptLogprobsError, PromptLogprobsRanker

PURPOSE = "irr_vlm_perplexity"


@dataclass(frozen=True)
class PromptToken:
    token_id: int
    logprob: float | None  # None for the first prompt token
    text: str | None  # the server's decoded_token


def prompt_tokens(response: dict | None) -> list[PromptToken]:
    """The prompt tokens of a vLLM answer with ``prompt_logprobs``, in order."""
    entries = response.get("prompt_logprobs") if isinstance(response, dict) else None
    if not isinstance(entries, list) or not entries:
        raise PromptLogprobsError(
            "the answer has no prompt_logprobs (the server must be vLLM, or accept its prompt_logprobs parameter)"
        )
    tokens = []
    for position, entry in enumerate(entries):
        if entry is None:
            if position:
                raise PromptLogprobsError(f"prompt token {position} has no log-probability")
            tokens.append(PromptToken(-1, None, None))
            continue
        if not isinstance(entry, dict) or not entry:
            raise PromptLogprobsError(f"prompt_logprobs[{position}] is not a token dict")
        key, value = next(iter(entry.items()))  # vLLM lists the prompt's own token first
        try:
            token_id = int(key)
            logprob = float(value["logprob"])
        except (KeyError, TypeError, ValueError):
            raise PromptLogprobsError(f"prompt_logprobs[{position}] has no usable token id and logprob") from None
        if not math.isfinite(logprob):
            raise PromptLogprobsError(f"prompt token {position} has the log-probability {logprob}")
        decoded = value.get("decoded_token")
        tokens.append(PromptToken(token_id, logprob, decoded if isinstance(decoded, str) else None))
    return tokens


def review_tokens(prefix: Sequence[PromptToken], full: Sequence[PromptToken]) -> list[PromptToken]:
    """The tokens of ``full`` after its common start with ``prefix`` (compared by token id; the
    first token, whose id vLLM does not report, is taken as shared)."""
    shared = 1
    limit = min(len(prefix), len(full))
    while shared < limit and prefix[shared].token_id == full[shared].token_id:
        shared += 1
    scored = list(full[shared:])
    if not scored:
        raise PromptLogprobsError("the review request has no tokens beyond the prefix request's (empty review?)")
    return scored


class VLMPerplexityRanker(PromptLogprobsRanker):
    kind = "vlm-perplexity"
    prompt_version_label = "vlm-perplexity-prefix"

    def __init__(self, *, prompt_logprobs: int = 0, **common):
        super().__init__(**common)
        self.prompt_logprobs = prompt_logprobs
        # (item_id, review_id) -> the review's tokens as scored, for inspection.
        self.scored_tokens: dict[tuple[str, str], list[PromptToken]] = {}

    def _user_turn(self, item: ReviewItem) -> dict:
        # Image first, then the instruction: the order LLaVA-style templates put them in.
        return {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": image_url(item.image_url)}},
            {"type": "text", "text": self.prefix_for(item.language).rstrip()},
        ]}

    def _request(self, messages: list[dict], *, open_final_message: bool):
        template = ({"add_generation_prompt": False, "continue_final_message": True} if open_final_message
                    else {"add_generation_prompt": True})
        return chat_request(messages=messages, model=self.model, purpose=PURPOSE, max_tokens=1, temperature=0,
                            prompt_logprobs=self.prompt_logprobs, **template)

    def score_items(self, items: Sequence[ReviewItem]):
        for item in items:
            self.prefix_for(item.language)  # unknown languages fail here, before anything is sent
        self.unscored, self.scored_tokens = [], {}
        jobs, requests = [], []
        for item in items:
            if not item.image_url:
                self.unscored.append(Unscored(item.item_id, "the review set has no image"))
                continue
            try:
                user = self._user_turn(item)
            except (OSError, ValueError) as error:  # a stored file gone missing, or not an image
                self.unscored.append(Unscored(item.item_id, f"cannot send the image: {error}"))
                continue
            jobs.append((item, len(requests)))
            requests.append(self._request([user], open_final_message=False))
            requests.extend(
                self._request([user, {"role": "assistant", "content": text}], open_final_message=True)
                for _, text in item.reviews
            )
        if self.llm.on_requests is not None:
            self.llm.on_requests(len(requests))
        results = run_batch(requests, run=self.llm.run, progress=self.llm.progress,
                            client=self.llm.client) if requests else []
        if not self.model_name and results:
            self.model_name = results[0].model
        rows = []
        for item, first in jobs:
            item_results = results[first:first + 1 + len(item.reviews)]
            try:
                prefix = self._tokens(item_results[0])
                scored = [review_tokens(prefix, self._tokens(result)) for result in item_results[1:]]
            except PromptLogprobsError as error:
                self.unscored.append(Unscored(item.item_id, str(error)))
                continue
            for (review_id, _), tokens in zip(item.reviews, scored):
                self.scored_tokens[(item.item_id, review_id)] = tokens
                rows.append((item.item_id, item.language, review_id,
                             perplexity_from_log_probs([token.logprob for token in tokens])))
        order = {item.item_id: position for position, item in enumerate(items)}
        self.unscored.sort(key=lambda missing: order[missing.item_id])
        return scores_frame(self.model_name, rows)

    @staticmethod
    def _tokens(result: LLMResult) -> list[PromptToken]:
        if not result.ok:
            raise PromptLogprobsError(f"the request failed ({result.status}): {result.error}")
        return prompt_tokens(result.response)
