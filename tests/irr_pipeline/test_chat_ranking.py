"""Response-based ranking by a chat model: the prompt, reading the permutation, the corrective retry."""
from __future__ import annotations

import re

import pytest

from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem
from evaluation.rankers.chat_ranking import (
    TEMPLATE_NAMES,
    ChatRankingRanker,
    RankingAnswerError,
    parse_permutation,
)

from .conftest import MODEL, image_parts, user_text

pytestmark = pytest.mark.django_db

LABELS = list("ABCDE")

EN_TEXTS = ["Sharp and balanced.", "I love the calm mood.", "It should show the inside.", "Purple would suit me.",
            "The desert looks lonely."]
JA_TEXTS = ["構図が整っています。", "穏やかな雰囲気が好きです。", "内部も写すべきでした。", "紫色にすべきでした。",
            "砂漠が寂しく見えます。"]
ITEMS = [
    ReviewItem("11", "en", [(f"e{n}", text) for n, text in enumerate(EN_TEXTS, 1)],
               image_url="https://images.example.org/lighthouse.jpg", category="Places"),
    ReviewItem("12", "ja", [(f"j{n}", text) for n, text in enumerate(JA_TEXTS, 1)],
               image_url="https://images.example.org/mill.jpg", category="Places"),
]
LEVEL = {text: level for texts in (EN_TEXTS, JA_TEXTS) for level, text in enumerate(texts, 1)}


def shown_labels(body: dict) -> dict[str, str]:
    """label -> review text, read back from the first prompt."""
    return dict(re.findall(r"^([A-E]): (.+)$", user_text(body), flags=re.MULTILINE))


def in_prompt_rank_order(body: dict) -> list[str]:
    shown = shown_labels(body)
    return sorted(shown, key=lambda label: LEVEL[shown[label]])


@pytest.mark.parametrize("answer, expected", [
    ("B > D > A > C > E", "BDACE"),
    ("Ranking: B, D, A, C, E.", "BDACE"),
    ('["B", "D", "A", "C", "E"]', "BDACE"),
    ("```json\n[\"E\",\"D\",\"C\",\"B\",\"A\"]\n```", "EDCBA"),
    ("1. B\n2. D\n3. A\n4. C\n5. E", "BDACE"),
    ("A review that is objective wins. I considered A > B > C > D but then:\nFinal answer: C > A > E > B > D", "CAEBD"),
    ("順位：B＞D＞A＞C＞E です。", "BDACE"),
    ("B D A C E", "BDACE"),
])
def test_parse_permutation_reads_common_answer_shapes(answer, expected):
    assert parse_permutation(answer, LABELS) == list(expected)


@pytest.mark.parametrize("answer", [
    "B > D > A > C",  # one missing
    "B > B > A > C > E",  # one twice
    "A is the best review.",
    "",
    "B > D > A > C > F",  # not a label
])
def test_parse_permutation_refuses_anything_else(answer):
    with pytest.raises(RankingAnswerError, match="no ordering of all of A, B, C, D, E"):
        parse_permutation(answer, LABELS)


def test_chat_ranker_scores_are_the_ranks_of_the_answer(llm_settings, fake_server):
    fake_server.responder = lambda endpoint, body: "Best first: " + " > ".join(in_prompt_rank_order(body))
    ranker = ChatRankingRanker()
    frame = ranker.score_items(ITEMS)

    assert list(frame.columns) == SCORE_COLUMNS and ranker.unscored == []
    assert set(frame["model"]) == {MODEL}
    # The fake answers in prompt-rank order, so each review's rank is its level.
    assert dict(zip(frame["review_id"], frame["score"])) == {
        **{f"e{n}": float(n) for n in range(1, 6)}, **{f"j{n}": float(n) for n in range(1, 6)}}
    bodies = [request.body for request in fake_server.completion_requests]
    assert len(bodies) == 2
    for body in bodies:
        shown = shown_labels(body)
        assert sorted(shown) == LABELS
        assert [LEVEL[shown[label]] for label in LABELS] != [1, 2, 3, 4, 5]  # shown shuffled
        assert len(image_parts(body)) == 1
    japanese = next(body for body in bodies if "穏やか" in user_text(body))
    assert "良いものから順に" in user_text(japanese)
    assert ranker.prompt_version == f"{TEMPLATE_NAMES['en']}@1, {TEMPLATE_NAMES['ja']}@1"


def test_the_shown_order_is_seeded(llm_settings):
    first, again = ChatRankingRanker(seed=0), ChatRankingRanker(seed=0)
    assert first.shown_order(ITEMS[0]) == again.shown_order(ITEMS[0])
    assert sorted(review_id for _, review_id in first.shown_order(ITEMS[0])) == ["e1", "e2", "e3", "e4", "e5"]
    orders = {tuple(ChatRankingRanker(seed=seed).shown_order(ITEMS[0])) for seed in range(6)}
    assert len(orders) > 1


def test_without_the_image(llm_settings, fake_server):
    fake_server.responder = lambda endpoint, body: " > ".join(in_prompt_rank_order(body))
    ChatRankingRanker(with_image=False).score_items(ITEMS[:1])
    assert image_parts(fake_server.completion_requests[0].body) == []


def test_an_unreadable_answer_gets_one_corrective_follow_up(llm_settings, fake_server):
    def answer(endpoint, body):
        if len(body["messages"]) == 1:
            return "They are all fine reviews."
        return " > ".join(in_prompt_rank_order(body))

    fake_server.responder = answer
    ranker = ChatRankingRanker()
    frame = ranker.score_items(ITEMS[:1])
    assert ranker.unscored == [] and list(frame["score"]) == [1.0, 2.0, 3.0, 4.0, 5.0]
    first, second = (request.body for request in fake_server.completion_requests)
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][0] == first["messages"][0]
    assert second["messages"][1]["content"] == "They are all fine reviews."
    assert "could not be read as a ranking" in second["messages"][2]["content"]


def test_still_unreadable_leaves_the_item_unscored(llm_settings, fake_server):
    def answer(endpoint, body):
        if "穏やか" in user_text(body):
            return " > ".join(in_prompt_rank_order(body))
        return "A > B"

    fake_server.responder = answer
    ranker = ChatRankingRanker()
    frame = ranker.score_items(ITEMS)
    assert set(frame["item_id"]) == {"12"}
    assert [(u.item_id, u.reason) for u in ranker.unscored] == [
        ("11", "no ordering of all of A, B, C, D, E (each once) was found")]
    assert len(fake_server.completion_requests) == 3  # two for the English item, one for the Japanese
    # The English item's two unusable answers left the cache; the Japanese one stays cached.
    from llm.models import LLMCall

    assert sorted(LLMCall.objects.values_list("status", flat=True)) == ["ok", "rejected", "rejected"]
    fake_server.reset()
    ChatRankingRanker().score_items(ITEMS)
    assert len(fake_server.completion_requests) == 2  # the English item is asked again (and retried)
