"""Perplexity from a completions server's echoed prompt log-probabilities (the fake speaks vLLM's shape)."""
from __future__ import annotations

import math

import pytest

from evaluation.rankers.base import PERPLEXITY_PREFIXES, SCORE_COLUMNS, ReviewItem
from evaluation.rankers.server_perplexity import PromptLogprobsError, ServerPerplexityRanker, review_log_probs
from fakes.openai_server import fake_logprob
from llm.client import LLMClient
from llm.params import LLMRunParams

from .conftest import MODEL

pytestmark = pytest.mark.django_db

ITEMS = [
    ReviewItem("en-1", "en", [("r1", "A calm lake."), ("r2", "lake calm A.")]),
    ReviewItem("ja-1", "ja", [("r3", "静かな湖の写真です。"), ("r4", "湖。")]),
]


def perplexity(pairs: list[tuple[str, str]]) -> float:
    """exp(-mean log p) over (previous token, token) pairs, with the fake's log-probabilities."""
    return math.exp(-sum(fake_logprob(previous, token) for previous, token in pairs) / len(pairs))


def test_scores_are_the_review_tokens_perplexity(llm_settings, fake_server):
    ranker = ServerPerplexityRanker()
    frame = ranker.score_items(ITEMS)

    assert list(frame.columns) == SCORE_COLUMNS and ranker.unscored == []
    assert set(frame["model"]) == {MODEL}
    scores = frame.set_index("review_id")["score"]
    # Worked out by hand from the fake's tokenizer. English: the prefix ends "...\nReview: ", so the
    # review's first token is " A" (the prefix's last space joins the word); the prefix tokens before
    # it ("\nReview", ":" and the rest) are not scored, nor is the one generated token.
    assert scores["r1"] == pytest.approx(perplexity([(":", " A"), (" A", " calm"), (" calm", " lake"), (" lake", ".")]))
    assert scores["r2"] == pytest.approx(perplexity([(":", " lake"), (" lake", " calm"), (" calm", " A"), (" A", ".")]))
    # Japanese: the prefix ends with "：", a token of its own; the review is one word token and "。".
    assert scores["r3"] == pytest.approx(perplexity([("：", "静かな湖の写真です"), ("静かな湖の写真です", "。")]))
    assert scores["r4"] == pytest.approx(perplexity([("：", "湖"), ("湖", "。")]))
    # Scoring all prompt tokens instead would give a different number: the prefix really is excluded.
    assert scores["r4"] != pytest.approx(perplexity([("レビュー", "："), ("：", "湖"), ("湖", "。")]))

    bodies = [request.body for request in fake_server.completion_requests]
    assert len(bodies) == 4  # one request per review, in one batch
    assert sorted(body["prompt"] for body in bodies) == sorted(
        PERPLEXITY_PREFIXES[item.language] + text for item in ITEMS for _, text in item.reviews)
    assert all(body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1 for body in bodies)


def test_zero_max_tokens_gives_the_same_numbers(llm_settings, fake_server):
    with_generation = ServerPerplexityRanker().score_items(ITEMS)["score"].to_numpy()
    prompt_only = ServerPerplexityRanker(max_tokens=0, logprobs=0).score_items(ITEMS)["score"].to_numpy()
    assert list(prompt_only) == pytest.approx(list(with_generation))
    assert fake_server.completion_requests[-1].body["max_tokens"] == 0


def test_a_failed_call_leaves_its_item_unscored(fake_server):
    client = LLMClient(base_url=fake_server.base_url, api_key="irr-key", model=MODEL, max_retries=0, max_concurrency=1)
    fake_server.fail_next(1, status=400, message="prompt too long")
    ranker = ServerPerplexityRanker(llm=LLMRunParams(client=client))
    frame = ranker.score_items(ITEMS)
    assert set(frame["item_id"]) == {"ja-1"} and len(frame) == 2
    assert [u.item_id for u in ranker.unscored] == ["en-1"]
    assert "prompt too long" in ranker.unscored[0].reason


def test_an_unknown_language_fails_before_anything_is_sent(llm_settings, fake_server):
    with pytest.raises(ValueError, match="no perplexity prefix for language 'fr'"):
        ServerPerplexityRanker().score_items([ReviewItem("x", "fr", [("a", "Bonjour."), ("b", "Salut.")])])
    assert fake_server.completion_requests == []


def test_review_log_probs_reads_offsets():
    prefix, review = "Say: ", "hi there"
    logprobs = {
        "tokens": ["Say", ":", " hi", " there", "!"],
        "token_logprobs": [None, -1.0, -2.0, -3.0, -9.0],
        "text_offset": [0, 3, 4, 7, 13],  # "!" is generated, past the prompt
    }
    assert review_log_probs(logprobs, prefix_length=len(prefix), prompt_length=len(prefix + review)) == [-2.0, -3.0]
    with pytest.raises(PromptLogprobsError, match="no logprobs"):
        review_log_probs(None, prefix_length=5, prompt_length=13)
    with pytest.raises(PromptLogprobsError, match="matching"):
        review_log_probs({"tokens": ["a"], "token_logprobs": [], "text_offset": [0]}, prefix_length=0, prompt_length=1)
    with pytest.raises(PromptLogprobsError, match="no review token"):
        review_log_probs({"tokens": ["Say", ":"], "token_logprobs": [None, -1.0], "text_offset": [0, 3]},
                         prefix_length=5, prompt_length=5)
