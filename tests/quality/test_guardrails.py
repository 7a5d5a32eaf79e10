"""Guardrails in free-text tasks: paste events and typing time stored, near-duplicates of other
workers' texts and of LLM outputs flagged for review (never rejected automatically)."""
import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from datasets_app.models import ModelOutput
from tests.annotation.factories import make_candidate, make_instance, make_round, make_worker, make_worker_user

pytestmark = pytest.mark.django_db

CAPTION = "A red bicycle leans against a green door under a small wooden sign."
LLM_TEXT = "The image shows a tall lighthouse on a rocky coast at sunset with gulls."


@pytest.fixture
def caption_round():
    instance = make_instance(captions=False)
    make_candidate(instance=instance, text=LLM_TEXT)
    ModelOutput.objects.create(instance=instance, model_name="model-z", text="Something else entirely, unrelated.")
    return make_round(task_type="caption", targets=[instance], workers_per_item=4)


def submit(round, worker, caption, typing=None):
    assignment = request_assignment(round=round, worker=worker)
    data = {"captions": [caption]}
    if typing is not None:
        data["typing"] = typing
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=data)
    assignment.refresh_from_db()
    return assignment


def test_near_duplicates_of_other_workers_and_of_llm_outputs_are_flagged(caption_round):
    first = submit(caption_round, make_worker(), CAPTION, {"pastes": 0, "pasted_chars": 0, "typing_seconds": 41.2})
    assert first.flags == [] and first.input_stats == {"pastes": 0, "pasted_chars": 0, "typing_seconds": 41.2}
    copy = submit(caption_round, make_worker(), CAPTION.replace("small", "little") + " ")
    assert copy.flags == [{"kind": "near_duplicate", "of": "worker", "assignment": first.pk,
                           "similarity": copy.flags[0]["similarity"]}]
    assert copy.flags[0]["similarity"] >= 0.9
    machine = submit(caption_round, make_worker(), LLM_TEXT.lower())
    assert [(f["kind"], f["of"], f["source"].split(" ")[0]) for f in machine.flags] == [
        ("near_duplicate", "llm", "reference")]
    own = submit(caption_round, make_worker(), "Two dogs play with a ball on wet sand near the sea.",
                 '{"pastes": 1, "pasted_chars": 50, "typing_seconds": 2}')
    assert own.flags == [{"kind": "pasted", "pasted_chars": 50, "written_chars": 51}]
    # Flagged work is submitted like any other: the review queue decides.
    assert set(Assignment.objects.filter(round=caption_round).values_list("review_status", flat=True)) == {"submitted"}


@pytest.mark.parametrize("typing, message", [
    ("not json", "not valid JSON"),
    ({"pastes": -1}, "pastes must be a number from 0"),
    ({"keystrokes": 5}, "takes only pastes, pasted_chars, typing_seconds"),
    ({"typing_seconds": True}, "typing_seconds must be a number"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON"),  # json.loads hit its recursion bound: a 500
], ids=["not-json", "negative", "unknown-key", "boolean", "nested-100000-deep"])
def test_a_bad_typing_record_is_refused_and_nothing_is_stored(caption_round, typing, message):
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    assignment = request_assignment(round=caption_round, worker=worker)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    response = client.post(f"/api/work/assignments/{assignment.pk}/submit/",
                           {"captions": [CAPTION], "typing": typing}, content_type="application/json")
    assert response.status_code == 400
    assert message in " ".join(response.json()["errors"]["typing"])
    assignment.refresh_from_db()
    assert assignment.status == "assigned" and assignment.input_stats is None


def test_choice_tasks_record_nothing(caption_round):
    from tests.annotation.factories import make_outputs

    from .rounds import side_choice

    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))])
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker,
                               data={**side_choice(assignment, "a"), "typing": "ignored"})
    assignment.refresh_from_db()
    assert assignment.input_stats is None and assignment.flags == []
