"""A sixth task type, defined and registered here only, following docs/crowd-work.md ("Adding a task
type"): the engine, the worker API, the worker page in chromium and a dry run take it without any
change to another module."""
from __future__ import annotations

from collections import Counter

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.template import Template
from django.urls import reverse
from playwright.sync_api import expect

from annotation.errors import InvalidSubmission
from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, create_round, open_round
from annotation.services.submissions import submit_assignment
from annotation.task_types import REGISTRY, TaskType
from annotation.task_types.base import gold_choice, instance_view
from datasets_app.models import Instance
from providers.dry_run import rehearse

from ..factories import make_instance, make_worker, make_worker_user
from .conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)

COMPLETED: list[int] = []


class ClarityForm(forms.Form):
    clear = forms.ChoiceField(choices=[("yes", "yes"), ("no", "no")],
                              error_messages={"required": "Say whether the instruction is clear."})


class ClarityTask(TaskType):
    """Is an instance's instruction clear enough to answer? It reuses the ``instance`` column."""

    key = "clarity"
    label = "Instruction clarity"
    instructions = "Read the instruction. Could you answer it from the image alone?"
    template_name = Template(
        '<p class="instruction-box"><span class="instruction-text">{{ task.instance.instruction }}</span></p>'
        '<fieldset><legend>Is the instruction clear?</legend>'
        '<label><input type="radio" name="clear" value="yes" id="clear-yes"> Yes</label>'
        '<label><input type="radio" name="clear" value="no" id="clear-no"> No</label></fieldset>'
    )
    form_class = ClarityForm
    target_model = Instance
    target_fields = ("instance",)

    def context(self, assignment):
        return {"instance": instance_view(assignment.item.instance)}

    def result(self, assignment):
        return {"clear": assignment.payload["clear"] == "yes"}

    def aggregate(self, item):
        votes = Counter(result["clear"] for result in item.assignments.submitted().values_list("result", flat=True))
        return {"clear": votes[True] > votes[False], "votes": votes[True] + votes[False]}

    def on_completed(self, item):
        COMPLETED.append(item.pk)

    def simulate(self, *, assignment, rng, accuracy):
        expected = assignment.item.gold_answer.get("clear") if assignment.item.is_gold else None
        return {"clear": gold_choice(rng=rng, accuracy=accuracy, choices=["yes", "no"],
                                     expected={True: "yes", False: "no"}.get(expected))}


@pytest.fixture
def clarity():
    COMPLETED.clear()
    with REGISTRY.registered(ClarityTask) as task_type:
        yield task_type
    assert "clarity" not in REGISTRY


def clarity_round(*, items: int = 1, workers_per_item: int = 1, open: bool = True):
    round = create_round(name="Clarity check", task_type="clarity", workers_per_item=workers_per_item)
    add_items(round=round, targets=[make_instance() for _ in range(items)])
    if open:
        round = open_round(round=round)
    return round


def test_the_engine_takes_the_sixth_type(clarity):
    round = clarity_round(workers_per_item=2)
    item = round.items.get()
    for answer in ("yes", "yes"):
        worker = make_worker()
        assignment = request_assignment(round=round, worker=worker)
        assert assignment.item_id == item.pk
        with pytest.raises(InvalidSubmission) as refused:
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"clear": "maybe"})
        assert list(refused.value.errors) == ["clear"]
        submit_assignment(assignment_id=assignment.pk, worker=worker, data={"clear": answer})
    item.refresh_from_db()
    assert item.completed_at is not None and item.aggregate_result == {"clear": True, "votes": 2}
    assert COMPLETED == [item.pk]  # its completion hook ran, through the registry
    # Its target check is the authority: an instance item only.
    with pytest.raises(ValidationError):
        add_items(round=round, targets=["not an instance"])


def test_the_worker_api_takes_the_sixth_type(clarity, client):
    round = clarity_round()
    client.force_login(make_worker_user())
    body = client.post(reverse("annotation-api:next", args=[round.pk])).json()
    assignment = body["assignment"]
    assert assignment["task_type"] == "clarity" and assignment["task"]["instance"]["instruction"]
    refused = client.post(assignment["submit_url"], {"clear": "perhaps"}, content_type="application/json")
    assert refused.status_code == 400
    assert set(refused.json()["errors"]) == {"clear"} and refused.json()["detail"]
    stored = client.post(assignment["submit_url"], {"clear": "no"}, content_type="application/json")
    assert stored.status_code == 201 and "result" not in stored.json()
    assert stored.json()["payload"] == {"clear": "no"}  # as the worker gave it
    assert Assignment.objects.get(pk=assignment["id"]).result == {"clear": False}


@pytest.mark.browser
def test_the_worker_page_takes_the_sixth_type(clarity, page):
    round = clarity_round()
    user = make_worker_user()
    log_in(page, user.username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")
    assert page.locator(".task-type").text_content() == "Instruction clarity"
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#task-status")).to_contain_text("Say whether", timeout=15_000)
    page.check("#clear-yes")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector("#no-task")
    assignment = Assignment.objects.get(round=round)
    assert (assignment.status, assignment.payload) == (Assignment.Status.SUBMITTED, {"clear": "yes"})
    assert page.js_errors == []


def test_a_dry_run_takes_the_sixth_type(clarity, settings):
    settings.PROVIDERS_PUBLIC_BASE_URL = "https://crowdbench.example.org"
    round = clarity_round(items=3, workers_per_item=2, open=False)
    report = rehearse(round=round, provider_name="local", accuracy=1.0, median_seconds=90, seed=5)
    assert report.tasks_submitted == 6 and report.approved == 6
    assert not Assignment.objects.filter(round=round).exists()
