"""Response-based ranking: a chat model is asked to order the reviews, as the annotators were.

The prompt (IRR Appendix A.3 style) gives the annotators' criteria, the reviews labelled A, B, C, …
in an order shuffled per item with a fixed seed (so the stored order, the prompt rank, gives no
hint and a re-run sends the same requests), and optionally the image. The answer is read as a
permutation of the labels, tolerating surrounding text: "B > D > A > C > E", "B, D, A, C, E",
a JSON list, or one label per numbered line. An unreadable answer gets one corrective follow-up
(a new request); if that is unreadable too, the item is reported in ``unscored``. A review's score
is its rank in the answer (1 = best).
"""
from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

from llm.client import chat_request
from llm.params import LLMRunParams
from llm.services import ensure_template, render_template
from llm.structured import ask_for_parsed_answers

from .base import ReviewItem, Unscored, scores_frame

PURPOSE = "irr_chat_ranking"
TEMPLATE_NAMES = {"en": "irr-chat-ranking-en", "ja": "irr-chat-ranking-ja"}
TEMPLATE_TEXTS = {
    "en": (
        "Look at the image (category: {category}) and read the {count} reviews of it below. Put them in "
        "order, best first: a good review is reasonable (truthful, consistent and informative about the "
        "image) and objective.\n\n{reviews}\n\n"
        "Answer with the labels only, best first, separated by \" > \", for example: {example}"
    ),
    "ja": (
        "画像（カテゴリ：{category}）を見て、下の {count} 件のレビューを読んでください。良いものから順に並べて"
        "ください。良いレビューとは、妥当（画像について正確で、一貫していて、情報に富む）かつ客観的なものです。"
        "\n\n{reviews}\n\n"
        "ラベルだけを良い順に \" > \" で区切って答えてください。例：{example}"
    ),
}
CORRECTIONS = {
    "en": ("Your answer could not be read as a ranking: {problem}. Reply with only the labels {labels}, each "
           "exactly once, best first, separated by \" > \", for example: {example}"),
    "ja": ("回答を順位として読み取れませんでした：{problem}。ラベル {labels} をそれぞれ一度だけ、良い順に "
           "\" > \" で区切って、ラベルだけで答えてください。例：{example}"),
}
MAX_TOKENS = 300


class RankingAnswerError(ValueError):
    """The answer does not contain a permutation of the labels."""


def parse_permutation(text: str, labels: Sequence[str]) -> list[str]:
    """The labels in the answer's order (best first); the last complete permutation found wins.

    Labels are single capital letters; a lone capital letter in prose ("A review …") does not
    count, because only chains of labels joined by separators (or a JSON list, or numbered lines)
    are read.
    """
    wanted = set(labels)
    text = text or ""

    def permutation(found: list[str]) -> list[str] | None:
        return found if len(found) == len(labels) and set(found) == wanted else None

    candidates: list[tuple[int, list[str]]] = []  # (where in the text, labels)
    for match in re.finditer(r"\[[^\[\]]*\]", text):
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            found = permutation([v.strip() for v in value])
            if found:
                candidates.append((match.start(), found))
    label = "[" + "".join(re.escape(x) for x in labels) + "]"
    quoted = rf"[\"'(\[【「]?{label}[\"')\]】」]?"
    separator = r"\s*(?:>|＞|→|->|,|，|、|;|\s)\s*"
    chain = re.compile(rf"(?<![A-Za-z0-9]){quoted}(?:{separator}{quoted}){{{len(labels) - 1}}}(?![A-Za-z0-9])")
    for match in chain.finditer(text):
        found = permutation(re.findall(label, match.group(0)))
        if found:
            candidates.append((match.start(), found))
    numbered = list(re.finditer(rf"(?m)^\s*\d+\s*[.):．、]\s*{quoted}(?![A-Za-z0-9])", text))
    if numbered:
        found = permutation([re.search(label, line.group(0)).group(0) for line in numbered])
        if found:
            candidates.append((numbered[0].start(), found))
    if not candidates:
        raise RankingAnswerError(f"no ordering of all of {', '.join(labels)} (each once) was found")
    return max(candidates, key=lambda candidate: candidate[0])[1]


def ensure_ranking_templates() -> dict[str, tuple[str, int]]:
    versions = {}
    for language, name in TEMPLATE_NAMES.items():
        template = ensure_template(
            name=name, text=TEMPLATE_TEXTS[language],
            description="IRR: a chat model ranks the reviews of an image, with the annotators' criteria.",
        )
        versions[language] = (template.name, template.version)
    return versions


@dataclass
class _Question:
    item: ReviewItem
    order: list[tuple[str, str]]  # (label, review_id) as shown
    request: object
    problem: str = ""
    ranking: list[str] | None = None

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.order]


class ChatRankingRanker:
    kind = "chat"
    uses_llm = True
    needs_scores_file = False

    @classmethod
    def from_options(cls, options) -> ChatRankingRanker:
        return cls(with_image=options.with_image, seed=options.seed, llm=options.llm_params())

    def __init__(self, *, with_image: bool = True, seed: int = 0, llm: LLMRunParams = LLMRunParams()):
        self.llm = llm
        self.model = llm.model
        self.model_name = llm.model or (llm.client.config.model if llm.client else "") or ""
        self.with_image = with_image
        self.seed = seed
        self.prompt_version = ""
        self.unscored: list[Unscored] = []

    def shown_order(self, item: ReviewItem) -> list[tuple[str, str]]:
        """(label, review_id) in the order shown: shuffled, the same for the same seed and item."""
        if len(item.reviews) > len(string.ascii_uppercase):
            raise ValueError(f"item {item.item_id}: at most 26 reviews can be labelled")
        review_ids = [review_id for review_id, _ in item.reviews]
        random.Random(f"{self.seed}:{item.item_id}").shuffle(review_ids)
        return list(zip(string.ascii_uppercase, review_ids))

    def _question(self, item: ReviewItem) -> _Question:
        if item.language not in TEMPLATE_NAMES:
            raise ValueError(f"no ranking prompt for language {item.language!r}")
        order = self.shown_order(item)
        texts = dict(item.reviews)
        labels = [label for label, _ in order]
        prompt = render_template(
            TEMPLATE_NAMES[item.language], category=item.category or "unspecified", count=len(order),
            reviews="\n\n".join(f"{label}: {texts[review_id]}" for label, review_id in order),
            example=" > ".join(labels),
        )
        images = [item.image_url] if self.with_image and item.image_url else []
        request = chat_request(prompt, images=images, model=self.model, purpose=PURPOSE,
                               max_tokens=MAX_TOKENS, temperature=0)
        return _Question(item=item, order=order, request=request)

    def score_items(self, items: Sequence[ReviewItem]):
        versions = ensure_ranking_templates()
        questions = [self._question(item) for item in items]
        self.prompt_version = ", ".join(
            f"{name}@{version}" for language, (name, version) in versions.items()
            if any(item.language == language for item in items)
        )
        answers, _retried = ask_for_parsed_answers(
            [question.request for question in questions],
            parse=lambda index, text: parse_permutation(text, questions[index].labels),
            correction=lambda index, problem: self._correction(questions[index], problem),
            reject_reason="unusable ranking answer",
            llm=self.llm,
        )
        for question, answer in zip(questions, answers):
            question.ranking, question.problem = answer.value, answer.problem
            if not self.model_name and answer.model:
                self.model_name = answer.model
        rows, self.unscored = [], []
        for question in questions:
            item = question.item
            if question.ranking is None:
                self.unscored.append(Unscored(item.item_id, question.problem))
                continue
            review_of = dict(question.order)
            rank_of = {review_of[label]: rank for rank, label in enumerate(question.ranking, start=1)}
            rows.extend((item.item_id, item.language, review_id, float(rank_of[review_id]))
                        for review_id, _ in item.reviews)
        return scores_frame(self.model_name, rows)

    @staticmethod
    def _correction(question: _Question, problem: str) -> str:
        labels = question.labels
        return (CORRECTIONS[question.item.language].replace("{problem}", problem)
                .replace("{labels}", ", ".join(labels)).replace("{example}", " > ".join(labels)))
