"""In chromium: what the ranking and pairwise pages hold (every attribute, every text) and what the
submit request answers tell a worker nothing about prompt rank, model, reference side or gold."""
import json
import re

import pytest
from django.conf import settings

from annotation.models import Assignment
from annotation.task_types.ranking import shown_review_ids
from datasets_app.models import ModelOutput

from ..factories import make_instance, make_reference, make_review_set, make_round, make_worker_user
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every attribute value and the text of the task form, as the browser holds them.
ATTRIBUTES_AND_TEXT = """() => {
  const form = document.getElementById("task-form");
  const values = [form.innerText];
  for (const element of document.querySelectorAll("*")) {
    for (const attribute of element.attributes) values.push(attribute.value);
    if (element.value !== undefined && element.value !== "") values.push(String(element.value));
  }
  return values;
}"""


page_html = []


def page_ids_of_reviews(html: str) -> list[str]:
    """What names a review in the page: its data-review-id and its hidden input of the order."""
    return re.findall(r'data-review-id="([^"]*)"', html) + re.findall(r'name="order" value="([^"]*)"', html)


def open_and_submit(page, round, username, choose):
    """Open the round's task, let ``choose(page)`` answer it, submit; (what the page held, the answer)."""
    log_in(page, username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")
    held = page.evaluate(ATTRIBUTES_AND_TEXT)
    page_html[:] = [page.content()]
    choose(page)
    answers = []

    def keep_answer(route):
        # The page moves on right after the answer; read it on its way in.
        response = route.fetch()
        answers.append((response.status, response.text()))
        route.fulfill(response=response)

    # The page submits to submit-and-next, whose answer carries the next task too.
    submitted = re.compile(r"/submit-and-next/")
    page.route(submitted, keep_answer)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector("#no-task")
    page.unroute(submitted)
    (answer,) = answers
    return held, answer


def test_ranking_pages_name_reviews_by_ids_unrelated_to_prompt_rank(page):
    review_sets = [make_review_set(stored_images=True) for _ in range(3)]
    # One task per worker, so each submit ends on the "no more tasks" page.
    round = make_round(task_type="ranking", targets=review_sets, workers_per_item=2,
                       qualification_rules={"max_tasks_per_worker": 1})
    review_pks = {str(pk) for review_set in review_sets for pk in review_set.reviews.values_list("pk", flat=True)}
    in_prompt_order = 0
    for _ in range(6):
        user = make_worker_user()
        held, answer = open_and_submit(page, round, user.username, lambda page: None)
        assignment = Assignment.objects.get(worker__user=user)
        shown_of = shown_review_ids(assignment)
        ranks = {value: review.prompt_rank for review in assignment.item.review_set.reviews.all()
                 for pk, value in shown_of.items() if pk == review.pk}
        named = page_ids_of_reviews(page_html[0])
        assert len(named) == 10 and review_pks.isdisjoint(named), "a review id is in the page"
        assert {str(value) for value in shown_of.values()} <= set(held)
        in_prompt_order += [ranks[value] for value in sorted(ranks)] == [1, 2, 3, 4, 5]
        status, text = answer
        body = json.loads(text)
        assert status == 201 and "result" not in body
        assert body["payload"]["order"] == [shown_of[pk] for pk in assignment.payload["order"]]
        page.context.clear_cookies()
    assert in_prompt_order <= 1  # by chance 6/120 = 0.05


def test_pairwise_pages_hide_models_the_reference_side_and_gold(page):
    instance = make_instance(stored_images=True)
    output = ModelOutput.objects.create(instance=instance, model_name="secret-model-alpha", text="An answer.")
    reference = make_reference(instance=instance, text="Another answer.")
    round = make_round(task_type="pairwise", targets=[(output, reference)], workers_per_item=4,
                       gold_answers={0: {"winner": "b"}})
    for _ in range(4):
        user = make_worker_user()
        held, answer = open_and_submit(page, round, user.username, lambda page: page.keyboard.press("2"))
        text = "\n".join(held)
        for secret in ("secret-model-alpha", settings.ANNOTATION_REFERENCE_SIDE_NAME, "gold"):
            assert secret not in text.lower()
        status, text = answer
        body = json.loads(text)
        assert status == 201 and "result" not in body and body["payload"] == {"choice": "right"}
        assert "winner" not in text and '"b"' not in text
        assignment = Assignment.objects.get(worker__user=user)
        assert assignment.result == {"winner": assignment.presentation["right"]}
        page.context.clear_cookies()
