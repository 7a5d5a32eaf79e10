"""Perplexity given the image from vLLM's chat prompt_logprobs, through the openai SDK to the fake server."""
from __future__ import annotations

import math

import numpy as np
import pytest
from django.core.management import call_command

from datasets_app.models import Review, ReviewSet
from datasets_app.services import store_image
from evaluation.models import ReviewScore
from evaluation.rankers.base import PERPLEXITY_PREFIXES, SCORE_COLUMNS, ReviewItem
from evaluation.rankers.server_perplexity import PromptLogprobsError
from evaluation.rankers.vlm_perplexity import PromptToken, VLMPerplexityRanker, prompt_tokens, review_tokens
from fakes.openai_server import fake_prompt_logprob, images_key
from llm.client import LLMClient, image_url
from llm.params import LLMRunParams
from projects.services import unassigned_project

from .conftest import MODEL, png_bytes

pytestmark = pytest.mark.django_db

REVIEWS = [("r1", "A calm lake."), ("r2", "lake calm A."), ("r3", "Calm, a lake at dawn.")]


@pytest.fixture
def images(tmp_path):
    paths = {}
    for color in ("navy", "orange"):
        path = tmp_path / f"{color}.png"
        path.write_bytes(png_bytes(color))
        paths[color] = str(path)
    return paths


def by_hand(image_path: str, tokens: list[str]) -> float:
    """exp(-mean log p) of the review's tokens, the first one following the assistant header's newline."""
    key = images_key([image_url(image_path)])
    previous = ["\n", *tokens[:-1]]
    return math.exp(-sum(fake_prompt_logprob(key, p, t) for p, t in zip(previous, tokens)) / len(tokens))


def test_scores_are_the_review_tokens_perplexity_given_the_image(llm_settings, fake_server, images):
    items = [
        ReviewItem("en-1", "en", REVIEWS, image_url=images["navy"]),
        ReviewItem("ja-1", "ja", [("j1", "静かな湖の写真です。"), ("j2", "湖。")], image_url=images["orange"]),
    ]
    ranker = VLMPerplexityRanker()
    frame = ranker.score_items(items)
    assert list(frame.columns) == SCORE_COLUMNS and ranker.unscored == []
    assert set(frame["model"]) == {MODEL}

    # Exactly the review's tokens were scored (worked out by hand from the fake's tokenizer).
    scored = {key: [token.text for token in tokens] for key, tokens in ranker.scored_tokens.items()}
    assert scored == {
        ("en-1", "r1"): ["A", " calm", " lake", "."],
        ("en-1", "r2"): ["lake", " calm", " A", "."],
        ("en-1", "r3"): ["Calm", ",", " a", " lake", " at", " dawn", "."],
        ("ja-1", "j1"): ["静かな湖の写真です", "。"],
        ("ja-1", "j2"): ["湖", "。"],
    }
    scores = frame.set_index("review_id")["score"]
    expected = {
        "r1": by_hand(images["navy"], ["A", " calm", " lake", "."]),
        "r2": by_hand(images["navy"], ["lake", " calm", " A", "."]),
        "r3": by_hand(images["navy"], ["Calm", ",", " a", " lake", " at", " dawn", "."]),
        "j1": by_hand(images["orange"], ["静かな湖の写真です", "。"]),
        "j2": by_hand(images["orange"], ["湖", "。"]),
    }
    for review_id, value in expected.items():
        assert scores[review_id] == pytest.approx(value, rel=1e-12), review_id
    # The ranking (ascending perplexity) is the hand-computed one.
    english = frame[frame.item_id == "en-1"].sort_values("score")["review_id"].tolist()
    assert english == sorted(["r1", "r2", "r3"], key=expected.get)

    # One prefix request per item and one per review, all with the image first, then the prefix.
    bodies = [request.body for request in fake_server.completion_requests]
    assert len(bodies) == 2 + 3 + 2
    assert all(body["prompt_logprobs"] == 0 and body["max_tokens"] == 1 for body in bodies)
    prefix_requests = [body for body in bodies if len(body["messages"]) == 1]
    review_requests = [body for body in bodies if len(body["messages"]) == 2]
    assert len(prefix_requests) == 2 and all(body["add_generation_prompt"] is True for body in prefix_requests)
    assert all(body["add_generation_prompt"] is False and body["continue_final_message"] is True
               for body in review_requests)
    for body in bodies:
        parts = body["messages"][0]["content"]
        assert [part["type"] for part in parts] == ["image_url", "text"]
        assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
        assert parts[1]["text"] == PERPLEXITY_PREFIXES["en" if "Review" in parts[1]["text"] else "ja"].rstrip()
    assert sorted(body["messages"][1]["content"] for body in review_requests) == sorted(
        text for item in items for _, text in item.reviews)


def test_the_image_changes_the_scores(llm_settings, images):
    navy = VLMPerplexityRanker().score_items([ReviewItem("i", "en", REVIEWS, image_url=images["navy"])])
    orange = VLMPerplexityRanker().score_items([ReviewItem("i", "en", REVIEWS, image_url=images["orange"])])
    assert not np.allclose(navy["score"], orange["score"])


def test_a_rerun_is_answered_from_the_cache(llm_settings, fake_server, images):
    items = [ReviewItem("en-1", "en", REVIEWS, image_url=images["navy"])]
    first = VLMPerplexityRanker().score_items(items)
    sent = len(fake_server.completion_requests)
    again = VLMPerplexityRanker().score_items(items)
    assert len(fake_server.completion_requests) == sent == 4
    assert again.equals(first)


def test_items_that_cannot_be_scored_are_reported_and_the_others_kept(fake_server, images, tmp_path):
    client = LLMClient(base_url=fake_server.base_url, api_key="irr-key", model=MODEL, max_retries=0, max_concurrency=1)
    # A server that does not know vLLM's parameter refuses the first request (the first item's prefix).
    fake_server.fail_next(1, status=400, message="Unrecognized request argument supplied: prompt_logprobs")
    items = [
        ReviewItem("refused", "en", REVIEWS, image_url=images["navy"]),
        ReviewItem("no-image", "en", REVIEWS),
        ReviewItem("gone", "en", REVIEWS, image_url=str(tmp_path / "missing.png")),
        ReviewItem("fine", "en", REVIEWS, image_url=images["orange"]),
    ]
    ranker = VLMPerplexityRanker(llm=LLMRunParams(client=client))
    frame = ranker.score_items(items)
    assert set(frame["item_id"]) == {"fine"} and len(frame) == 3
    reasons = {missing.item_id: missing.reason for missing in ranker.unscored}
    assert list(reasons) == ["refused", "no-image", "gone"]
    assert "Unrecognized request argument supplied: prompt_logprobs" in reasons["refused"]
    assert reasons["no-image"] == "the review set has no image"
    assert reasons["gone"].startswith("cannot send the image")


def test_an_unknown_language_fails_before_anything_is_sent(llm_settings, fake_server, images):
    with pytest.raises(ValueError, match="no perplexity prefix for language 'fr'"):
        VLMPerplexityRanker().score_items([ReviewItem("x", "fr", REVIEWS, image_url=images["navy"])])
    assert fake_server.completion_requests == []


def entry(token_id, logprob, text="t"):
    return {str(token_id): {"logprob": logprob, "rank": 1, "decoded_token": text}}


def test_prompt_tokens_reads_vllm_answers_and_refuses_broken_ones():
    answer = {"prompt_logprobs": [None, entry(7, -1.5, "a"), {**entry(9, -0.25, "b"), **entry(4, -0.1, "z")}]}
    assert prompt_tokens(answer) == [PromptToken(-1, None, None), PromptToken(7, -1.5, "a"), PromptToken(9, -0.25, "b")]
    broken = [
        ({}, "no prompt_logprobs"),
        ({"prompt_logprobs": None}, "no prompt_logprobs"),
        ({"prompt_logprobs": [None, None]}, "prompt token 1 has no log-probability"),
        ({"prompt_logprobs": [None, {}]}, "not a token dict"),
        ({"prompt_logprobs": [None, {"x": {"logprob": -1}}]}, "no usable token id"),
        ({"prompt_logprobs": [None, {"3": {"rank": 1}}]}, "no usable token id"),
        ({"prompt_logprobs": [None, {"3": {"logprob": "-inf"}}]}, "log-probability -inf"),
    ]
    for response, message in broken:
        with pytest.raises(PromptLogprobsError, match=message):
            prompt_tokens(response)


def test_review_tokens_start_where_the_two_prompts_differ():
    def tokens(*ids):
        return [PromptToken(-1, None, None)] + [PromptToken(i, -float(i), str(i)) for i in ids]

    # The usual case: the prefix prompt is a prefix of the review prompt.
    assert [t.token_id for t in review_tokens(tokens(5, 6, 7), tokens(5, 6, 7, 8, 9))] == [8, 9]
    # A template whose generation prompt adds tokens the open assistant turn lacks (e.g. an empty
    # thinking block), or a token merging the header with the review's start: scored from the split.
    assert [t.token_id for t in review_tokens(tokens(5, 6, 7, 70, 71), tokens(5, 6, 7, 8, 9))] == [8, 9]
    assert [t.token_id for t in review_tokens(tokens(5, 6, 7), tokens(5, 6, 78, 9))] == [78, 9]
    with pytest.raises(PromptLogprobsError, match="no tokens beyond"):
        review_tokens(tokens(5, 6, 7), tokens(5, 6, 7))


def test_irr_rank_command_stores_the_scores(llm_settings, fake_server, tmp_path):
    image = store_image(project=unassigned_project(), content=png_bytes("teal"), license="CC0-1.0", category="landscape")
    review_set = ReviewSet.objects.create(project=image.project, image=image, language="en", category="landscape")
    for rank, (_, text) in enumerate(REVIEWS, start=1):
        Review.objects.create(review_set=review_set, prompt_rank=rank, text=text)
    out = tmp_path / "scores.csv"
    call_command("irr_rank", "--ranker", "vlm-perplexity", "--out", str(out), verbosity=0)
    stored = ReviewScore.objects.filter(ranker_kind="vlm-perplexity")
    assert stored.count() == 3 and {score.model_name for score in stored} == {MODEL}
    assert {score.prompt_version for score in stored} == {"vlm-perplexity-prefix@1"}
    by_text = {score.review.text: score.score for score in stored}
    key = images_key([image_url(image.file.path)])
    tokens = ["A", " calm", " lake", "."]
    expected = math.exp(-sum(fake_prompt_logprob(key, p, t) for p, t in zip(["\n", *tokens], tokens)) / 4)
    assert by_text["A calm lake."] == pytest.approx(expected, rel=1e-12)
    assert out.read_text().splitlines()[0] == ",".join(SCORE_COLUMNS)
