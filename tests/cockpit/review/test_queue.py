"""The review queue: each task type's submission as its worker saw it, filters, paging, access."""
from __future__ import annotations

import re

import pytest
from django.template import Template
from django.urls import reverse

from annotation.models import Assignment
from annotation.services.review import approve_assignment, reject_assignment
from annotation.services.submissions import submit_assignment
from annotation.task_types import REGISTRY
from cockpit.review import PER_PAGE
from datasets_app.models import Image
from projects.services import create_project
from providers import services as provider_services
from quality.selectors import worker_label
from tests.annotation.browser.test_sixth_task_type import ClarityTask
from tests.annotation.factories import make_instance, make_outputs, make_round

from ..conftest import PASSWORD
from .submitted import (
    HOSTILE,
    caption_submission,
    instruction_generation_submission,
    pairwise_submission,
    ranking_submission,
    submit,
    verification_submission,
)

pytestmark = pytest.mark.django_db

ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"


def queue_url(project, **query):
    url = reverse("cockpit:review", args=[project.slug])
    if query:
        url += "?" + "&".join(f"{key}={value}" for key, value in query.items())
    return url


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def card(html: str, assignment) -> str:
    """The article of one submission in the page."""
    match = re.search(rf'<article class="submission" id="submission-{assignment.pk}".*?</article>', html, re.S)
    assert match, f"submission {assignment.pk} not shown"
    return match.group(0)


def test_every_task_type_renders_as_the_worker_saw_it_with_worker_texts_escaped(client, researcher, project):
    made = {
        "instruction_generation": instruction_generation_submission(project),
        "caption": caption_submission(project),
        "verification": verification_submission(project),
        "pairwise": pairwise_submission(project),
        "ranking": ranking_submission(project),
    }
    assert set(made) == set(REGISTRY)
    response = login(client, researcher).get(queue_url(project))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script>alert" not in html and "<b>bold</b>" not in html
    assert 'id="queue-count">5 submissions' in html

    generated = card(html, made["instruction_generation"])
    assert ESCAPED in generated and "Which shape is on top?" in generated
    stored_image = made["instruction_generation"].result["image_ids"][0]
    assert Image.objects.get(pk=stored_image).display_url in generated
    assert "CC-BY-4.0" in generated and "A. Photographer" in generated

    captioned = card(html, made["caption"])
    instance = made["caption"].item.instance
    assert instance.ordered_images()[0].display_url in captioned
    assert instance.instruction in captioned and f"A red square. {ESCAPED}" in captioned

    verified = card(html, made["verification"])
    candidate = made["verification"].item.candidate
    assert "Exactly three shapes." in verified and candidate.instance.instruction in verified
    assert "Incorrect: the answer is wrong although the caption is fine" in verified
    assert f"The count is off. {ESCAPED}" in verified

    ranked = card(html, made["ranking"])
    assignment = made["ranking"]
    texts = dict(assignment.item.review_set.reviews.values_list("pk", "text"))
    shown_part, ranking_part = ranked.split('class="worker-ranking"')
    shown_texts = re.findall(r'<li class="review-text">(.*?)</li>', shown_part, re.S)
    expected_shown = [texts[pk] for pk in assignment.presentation["review_order"]]
    assert [t.replace(ESCAPED, HOSTILE) for t in shown_texts] == expected_shown
    ranked_texts = re.findall(r'<span class="review-text">(.*?)</span>', ranking_part, re.S)
    assert [t.replace(ESCAPED, HOSTILE) for t in ranked_texts] == [texts[pk] for pk in assignment.payload["order"]]
    assert assignment.item.review_set.image.display_url in ranked

    for assignment in made.values():
        shown = card(html, assignment)
        assert assignment.worker.user.username in shown  # local workers by their username
        assert "Local login" in shown and "Confirmed" in shown and "Submitted, awaiting review" in shown


def test_pairwise_sides_appear_as_presented_with_the_choice_marked(client, researcher, project):
    lefts = set()
    for _ in range(60):  # until both side orders occurred (each draw is a coin toss)
        lefts.add(pairwise_submission(project, choice="right").presentation["left"])
        if len(lefts) == 2:
            break
    assert lefts == {"a", "b"}
    html = login(client, researcher).get(queue_url(project)).content.decode()
    for assignment in Assignment.objects.filter(round__project=project):
        item = assignment.item
        texts = {"a": item.output_a.text, "b": item.output_b.text}
        shown = card(html, assignment)
        left, right = re.findall(r'<p class="response-text">(.*?)</p>', shown, re.S)
        assert (left, right) == (texts[assignment.presentation["left"]], texts[assignment.presentation["right"]])
        assert re.search(r'class="review-response chosen" data-side="right"', shown)
        assert item.output_a.instance.ordered_images()[0].display_url in shown


def test_gold_result_time_and_a_provider_worker_by_label(client, researcher, project, settings):
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0  # the arrival check cannot reach the provider here: no pauses
    outputs = tuple(make_outputs(instance=make_instance()))
    gold_round = make_round(task_type="pairwise", targets=[outputs], workers_per_item=2, project=project,
                            gold_answers={0: {"winner": "a"}})
    gold = submit(gold_round, lambda assignment: {
        "choice": "left" if assignment.presentation["left"] == "a" else "right"})
    provider_worker = provider_services.get_or_create_provider_worker(provider="mturk", external_id="A1RAWWORKERID")
    provider_work = provider_services.request_provider_assignment(
        round=gold_round, worker=provider_worker, item=gold.item, provider_assignment_id="ASSIGN1",
        provider_task_id="HIT1")
    wrong = "right" if provider_work.presentation["left"] == "a" else "left"
    submit_assignment(assignment_id=provider_work.pk, worker=provider_worker, data={"choice": wrong})
    html = login(client, researcher).get(queue_url(project)).content.decode()
    shown = card(html, gold)
    assert "gold: passed" in shown and "winner = a" in shown
    assert re.search(r"\d+ s</span>", shown)
    other = card(html, provider_work)
    assert "gold: failed" in other
    label = f"mturk worker #{provider_worker.pk}"
    assert worker_label(provider_worker) == label
    link = reverse("cockpit:worker", args=[project.slug, provider_worker.pk])
    assert f'<a class="worker-label" href="{link}">{label}</a>' in other and "A1RAWWORKERID" not in html
    assert "Amazon Mechanical Turk" in other and "Not yet confirmed by the provider" in other


def test_filters_by_round_status_and_worker(client, researcher, project):
    first = pairwise_submission(project)
    second = pairwise_submission(project)
    third = pairwise_submission(project, worker=second.worker)
    approve_assignment(assignment=first)
    reject_assignment(assignment=third, feedback="Too quick.")
    client = login(client, researcher)

    def shown(**query):
        response = client.get(queue_url(project, **query))
        assert response.status_code == 200
        return {int(pk) for pk in re.findall(r'id="submission-(\d+)"', response.content.decode())}

    assert shown() == {second.pk}  # pending by default
    assert shown(status="approved") == {first.pk}
    assert shown(status="rejected") == {third.pk}
    assert shown(status="all") == {first.pk, second.pk, third.pk}
    assert shown(status="all", round=second.round_id) == {second.pk}
    assert shown(status="all", worker=second.worker_id) == {second.pk, third.pk}
    assert shown(status="all", worker=second.worker_id, round=first.round_id) == set()
    rejected = client.get(queue_url(project, status="rejected")).content.decode()
    assert "Too quick." in rejected


def test_the_flagged_filter_keeps_flagged_work_and_failed_gold(client, researcher, project):
    plain = pairwise_submission(project)
    flagged = caption_submission(project)
    # As the engine's guardrails record a near-duplicate (worker text in it, escaped when shown).
    Assignment.objects.filter(pk=flagged.pk).update(flags=[
        {"kind": "near_duplicate", "of": "worker", "assignment": plain.pk, "similarity": 0.97, "note": HOSTILE}])
    outputs = tuple(make_outputs(instance=make_instance()))
    gold_round = make_round(task_type="pairwise", targets=[outputs], project=project,
                            gold_answers={0: {"winner": "a"}})
    failed_gold = submit(gold_round, lambda assignment: {
        "choice": "right" if assignment.presentation["left"] == "a" else "left"})
    assert failed_gold.gold_passed is False
    client = login(client, researcher)
    html = client.get(queue_url(project, flagged="on")).content.decode()
    assert {int(pk) for pk in re.findall(r'id="submission-(\d+)"', html)} == {flagged.pk, failed_gold.pk}
    shown = card(html, flagged)
    assert "<strong>near_duplicate</strong>" in shown and "similarity 0.97" in shown and ESCAPED in shown
    assert "<script>alert" not in html
    everything = client.get(queue_url(project)).content.decode()
    assert len(re.findall(r'id="submission-(\d+)"', everything)) == 3


def test_bad_filters_are_refused_with_their_name_and_foreign_rounds_or_workers_are_not_choices(
        client, researcher, project, make_researcher):
    mine = pairwise_submission(project)
    other_project = create_project(name="Study B", slug="study-b", owner=make_researcher("hopper"))
    theirs = pairwise_submission(other_project)
    client = login(client, researcher)
    for query, name in [({"status": "secret"}, "status"), ({"round": theirs.round_id}, "round"),
                        ({"worker": theirs.worker_id}, "worker"), ({"round": "x"}, "round"),
                        ({"round": 10**20}, "round"), ({"worker": 10**20}, "worker")]:
        response = client.get(queue_url(project, **query))
        assert response.status_code == 400, query
        assert f"Unknown filter value, {name}:" in response.content.decode()
    # A page number past the end (or not a number) shows the last (or first) page, never an error.
    for page in ("999", "abc", "-1", str(10**30)):
        response = client.get(queue_url(project, page=page))
        assert response.status_code == 200 and f'id="submission-{mine.pk}"' in response.content.decode()


def test_the_queue_is_paged(client, researcher, project):
    made = [pairwise_submission(project) for _ in range(PER_PAGE + 2)]
    client = login(client, researcher)
    first = client.get(queue_url(project)).content.decode()
    second = client.get(queue_url(project, page=2)).content.decode()
    on_first = {int(pk) for pk in re.findall(r'id="submission-(\d+)"', first)}
    on_second = {int(pk) for pk in re.findall(r'id="submission-(\d+)"', second)}
    assert len(on_first) == PER_PAGE and len(on_second) == 2
    assert on_first | on_second == {a.pk for a in made}
    assert "Page 1 of 2" in first and "?page=2" in first


def test_access_collaborators_see_without_review_forms_others_get_404(
        client, researcher, project, collaborator, make_researcher, django_user_model):
    assignment = pairwise_submission(project)
    as_owner = login(client, researcher).get(queue_url(project)).content.decode()
    assert 'id="bulk-review"' in as_owner and 'class="review-one"' in as_owner
    client.logout()
    as_collaborator = login(client, collaborator).get(queue_url(project))
    assert as_collaborator.status_code == 200
    html = as_collaborator.content.decode()
    assert f'id="submission-{assignment.pk}"' in html
    assert 'id="bulk-review"' not in html and 'class="review-one"' not in html
    client.logout()
    stranger = make_researcher("stranger")
    assert login(client, stranger).get(queue_url(project)).status_code == 404
    client.logout()
    django_user_model.objects.create_user("plain", password=PASSWORD)
    client.login(username="plain", password=PASSWORD)
    assert client.get(queue_url(project)).status_code == 403
    client.logout()
    assert client.get(queue_url(project)).status_code == 302  # to the login page


def test_a_broken_item_is_named_not_a_500(client, researcher, project):
    broken = pairwise_submission(project)
    Assignment.objects.filter(pk=broken.pk).update(presentation={})  # written past the checks
    fine = pairwise_submission(project)
    response = login(client, researcher).get(queue_url(project))
    assert response.status_code == 200
    html = response.content.decode()
    assert "no longer fits its task type" in card(html, broken)
    assert 'class="response-text"' in card(html, fine)


def test_a_task_type_registered_elsewhere_is_reviewed_through_its_own_hook(client, researcher, project):
    class ReviewedClarity(ClarityTask):
        key = "reviewed_clarity"
        review_template_name = Template(
            '<p class="clarity-review">{{ review.task.instance.instruction }}: {{ review.answers.clear }}</p>')

    with REGISTRY.registered(ClarityTask), REGISTRY.registered(ReviewedClarity):
        plain = submit(make_round(task_type="clarity", targets=[make_instance(instruction=f"Clear? {HOSTILE}")],
                                  project=project), {"clear": "yes"})
        own = submit(make_round(task_type="reviewed_clarity", targets=[make_instance(instruction="Is it?")],
                                project=project), {"clear": "no"})
        html = login(client, researcher).get(queue_url(project)).content.decode()
    assert '<dt>clear</dt><dd class="review-text">yes</dd>' in card(html, plain)  # the default: its answers
    assert '<p class="clarity-review">Is it?: no</p>' in card(html, own)
