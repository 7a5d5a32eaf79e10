"""Nothing a worker can see tells prompt rank, model, reference side or gold status (docs/crowd-work.md,
"What a worker sees"): pages and API answers of every task type, before and after submitting."""
import json
import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.urls import reverse
from scipy.stats import spearmanr

from annotation.models import Assignment
from annotation.task_types.ranking import shown_review_ids
from datasets_app.models import ModelOutput

from .factories import (
    make_candidate,
    make_family,
    make_instance,
    make_reference,
    make_review_set,
    make_round,
    make_worker_user,
)
from .test_api import client_for, next_task, submit

pytestmark = pytest.mark.django_db


class _Skeleton(HTMLParser):
    """Tags and attributes of a page without its texts; numbers, hashes and the CSRF token blanked, so
    two pages of one task type compare equal exactly when their markup says the same."""

    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("name") == "csrfmiddlewaretoken":
            attrs["value"] = "#"
        blank = {k: re.sub(r"\d+", "#", re.sub(r"[0-9a-f]{8,}", "#", v or "")) for k, v in attrs.items()}
        self.tags.append((tag, tuple(sorted(blank.items()))))


def skeleton(html: str) -> list:
    parser = _Skeleton()
    parser.feed(html)
    return parser.tags


def page_of(user, round) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    response = client.get(reverse("annotation:round", args=[round.pk]))
    assert response.status_code == 200
    return response.content.decode()


def outputs(instance, *names):
    return [ModelOutput.objects.create(instance=instance, model_name=name, text=f"An answer, number {i}.")
            for i, name in enumerate(names)]


def two_items(task_type):
    """Targets of two items of ``task_type``, the first a gold item, and its gold answer."""
    if task_type == "pairwise":
        instance = make_instance()
        (output,) = outputs(instance, "secret-model-alpha")
        other = make_instance()
        return [(output, make_reference(instance=instance)), tuple(outputs(other, "secret-model-beta",
                                                                            "secret-model-gamma"))], {"winner": "b"}
    if task_type == "ranking":
        return [make_review_set(), make_review_set()], {"ranks": {}}
    if task_type == "verification":
        return [make_candidate(), make_candidate()], {"outcome": "correct"}
    if task_type == "caption":
        return [make_instance(captions=False), make_instance(captions=False)], {"caption_ids": []}
    return [make_family(), make_family()], {"instance_id": None}


@pytest.mark.parametrize("task_type", ["instruction_generation", "caption", "verification", "pairwise", "ranking"])
def test_a_gold_item_looks_exactly_like_any_other(task_type):
    targets, gold_answer = two_items(task_type)
    round = make_round(task_type=task_type, targets=targets, gold_answers={0: gold_answer})
    gold_user, plain_user = make_worker_user(), make_worker_user()
    gold_page, plain_page = page_of(gold_user, round), page_of(plain_user, round)
    assert Assignment.objects.get(worker__user=gold_user).item.is_gold
    assert skeleton(gold_page) == skeleton(plain_page)
    api = next_task(client_for(gold_user), round).content.decode()
    for text in (gold_page, api):
        assert "gold" not in text.lower()
        assert "secret-model" not in text
        assert settings.ANNOTATION_REFERENCE_SIDE_NAME not in text


def test_the_reference_side_is_named_like_a_model_side_and_no_model_is_named():
    instance = make_instance()
    (output,) = outputs(instance, "secret-model-alpha")
    round = make_round(task_type="pairwise", targets=[(output, make_reference(instance=instance))],
                       workers_per_item=8)
    for _ in range(8):
        user = make_worker_user()
        page = page_of(user, round)
        client = client_for(user)
        assignment = next_task(client, round).json()["assignment"]
        assert set(assignment["task"]) == {"instance", "left", "right"}
        assert "secret-model" not in page + json.dumps(assignment)
        response = submit(client, assignment["id"], {"choice": "left"})
        assert response.status_code == 201
        body = response.json()
        # The worker's own answer in their terms; nothing says which side the click meant.
        assert "result" not in body and body["payload"] == {"choice": "left"}
        assert not re.search(r'"(a|b|winner|model_a|model_b)"', response.content.decode())
        stored = Assignment.objects.get(pk=assignment["id"])
        assert stored.result == {"winner": stored.presentation["left"]}


@pytest.mark.parametrize("task_type, answer", [
    ("verification", {"outcome": "correct", "harmful": False, "note": ""}),
    ("caption", {"captions": ["A small red square on white."]}),
])
def test_submit_answers_carry_the_workers_answers_not_the_result(task_type, answer):
    targets, gold = two_items(task_type)
    round = make_round(task_type=task_type, targets=targets[:1], gold_answers={0: gold} if gold else None)
    client = client_for(make_worker_user())
    assignment_id = next_task(client, round).json()["assignment"]["id"]
    for status in (201, 200):  # the first store and the repeat answer alike
        body = submit(client, assignment_id, answer).json()
        assert set(body) == {"assignment", "status", "review_status", "payload", "stored", "next_url"}
        assert all(body["payload"][key] == value for key, value in answer.items() if key in body["payload"])
    assert Assignment.objects.get(pk=assignment_id).result is not None


def _shown_ids(page: str) -> tuple[list[int], list[int]]:
    data_ids = [int(value) for value in re.findall(r'data-review-id="(\d+)"', page)]
    hidden = [int(value) for value in re.findall(r'<input type="hidden" name="order" value="(\d+)"', page)]
    return data_ids, hidden


def test_sorting_the_shown_review_ids_does_not_give_the_prompt_order():
    review_sets = [make_review_set() for _ in range(8)]
    round = make_round(task_type="ranking", targets=review_sets, workers_per_item=5)
    rhos, in_prompt_order = [], 0
    review_pks = set()
    for _ in range(40):
        user = make_worker_user()
        page = page_of(user, round)
        data_ids, hidden = _shown_ids(page)
        client = client_for(user)
        api = next_task(client, round).json()["assignment"]
        assert data_ids == hidden == [review["id"] for review in api["task"]["reviews"]]
        assignment = Assignment.objects.get(pk=api["id"])
        prompt_rank = {shown: review.prompt_rank for review in assignment.item.review_set.reviews.all()
                       for pk, shown in shown_review_ids(assignment).items() if pk == review.pk}
        review_pks |= set(assignment.item.review_set.reviews.values_list("pk", flat=True))
        by_sorted_ids = [prompt_rank[shown] for shown in sorted(data_ids)]
        in_prompt_order += by_sorted_ids in ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
        rhos.append(spearmanr(by_sorted_ids, [1, 2, 3, 4, 5]).statistic)
        # Submitting answers in the page's ids; the response repeats them, the database keeps review ids.
        response = submit(client, api["id"], {"order": data_ids})
        assert response.status_code == 201 and response.json()["payload"] == {"order": data_ids}
        assert "result" not in response.json()
        assignment.refresh_from_db()
        assert [prompt_rank[shown] for shown in data_ids] == [
            assignment.item.review_set.reviews.get(pk=pk).prompt_rank for pk in assignment.payload["order"]]
        assert review_pks.isdisjoint(data_ids)
    # By chance 40 × 2/120 = 0.7 assignments would list the reviews in (reverse) prompt order.
    assert in_prompt_order <= 3
    assert abs(sum(rhos) / len(rhos)) < 0.3


def test_ids_shown_to_one_worker_are_refused_in_another_assignment():
    review_set = make_review_set()
    round = make_round(task_type="ranking", targets=[review_set], workers_per_item=2)
    first, second = client_for(make_worker_user()), client_for(make_worker_user())
    first_ids = [review["id"] for review in next_task(first, round).json()["assignment"]["task"]["reviews"]]
    second_assignment = next_task(second, round).json()["assignment"]
    assert set(first_ids).isdisjoint(review["id"] for review in second_assignment["task"]["reviews"])
    response = submit(second, second_assignment["id"], {"order": first_ids})
    assert response.status_code == 400 and "exactly once" in response.json()["detail"]
    assert str(first_ids[0]) not in response.content.decode()
    assert Assignment.objects.get(pk=second_assignment["id"]).payload is None
