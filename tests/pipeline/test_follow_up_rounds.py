"""Rounds that name a follow-up round move instances on by themselves; discarded instances get new rounds."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation.models import CollectionRound, WorkItem
from annotation.pipeline import generate_and_route_references, recaption_discarded, regenerate_discarded
from annotation.services.rounds import create_round, open_round
from datasets_app.models import Caption, Instance, ReferenceCandidate
from fakes.openai_server import message_text
from llm.config import LLMNotConfigured
from llm.params import LLMRunParams
from stepruns.models import StepRun
from tests.annotation.factories import make_family, make_instance, make_round

from .builders import caption_instance, submit_all, verify

pytestmark = pytest.mark.django_db


def chained_caption_round(**options) -> tuple[CollectionRound, CollectionRound]:
    verification_round = create_round(name="Verify", task_type="verification", workers_per_item=3)
    instances = options.pop("instances")
    caption_round = make_round(task_type="caption", targets=instances, open=False)
    caption_round.follow_up_round = verification_round
    caption_round.full_clean()
    caption_round.save()
    open_round(round=caption_round)
    return caption_round, verification_round


def test_a_completed_caption_generates_the_reference_after_commit_and_opens_verification(
    llm_settings, fake_server, django_capture_on_commit_callbacks
):
    instance = make_instance(captions=False)
    caption_round, verification_round = chained_caption_round(instances=[instance])

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        caption_instance(round=caption_round, captions=["Two apples on a plate."])
    # Nothing is sent inside the worker's transaction.
    assert not fake_server.completion_requests and len(callbacks) == 1
    with django_capture_on_commit_callbacks(execute=True):
        callbacks[0]()  # the commit: a step run is queued (and run in-process here, no broker configured)

    run = StepRun.objects.get()
    assert (run.kind, run.project, run.status, run.budget_usd) == ("generate_references", instance.family.project,
                                                                    StepRun.Status.SUCCEEDED, None)
    assert run.llm_run.spent_usd == run.cost_usd and run.done == run.total == 1
    [request] = fake_server.completion_requests
    assert "Two apples on a plate." in message_text(request.body["messages"][-1]["content"])
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_VERIFICATION
    assert verification_round.items.get().candidate == ReferenceCandidate.objects.get(instance=instance)


def test_a_failing_llm_after_commit_does_not_undo_the_workers_caption(no_llm_settings, django_capture_on_commit_callbacks):
    instance = make_instance(captions=False)
    caption_round, verification_round = chained_caption_round(instances=[instance])
    with django_capture_on_commit_callbacks(execute=True):
        caption_instance(round=caption_round, captions=["A dog."])
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE  # waits for the command
    assert instance.captions.get(is_current=True).text == "A dog."
    assert not verification_round.items.exists() and not StepRun.objects.exists()


def test_new_instances_from_instruction_generation_go_to_the_follow_up_caption_round():
    family = make_family()
    caption_round = create_round(name="Captions", task_type="caption")
    generation = make_round(task_type="instruction_generation", targets=[family], workers_per_item=2, open=False)
    generation.follow_up_round = caption_round
    generation.save()
    open_round(round=generation)

    assignments = submit_all(round=generation, answers=[
        {"instruction": f"Question {n}?", "license": "CC0-1.0", "creator": "me",
         "source_url": "https://openverse.org/x", "image_url": f"https://images.example.org/new{n}.png"}
        for n in range(2)
    ])

    created = [assignment.result["instance_id"] for assignment in assignments]
    assert list(caption_round.items.values_list("instance_id", flat=True)) == created


def test_only_the_pipeline_order_can_be_chained():
    caption_round = create_round(name="Captions", task_type="caption")
    pairwise = create_round(name="Pairs", task_type="pairwise")
    caption_round.follow_up_round = pairwise
    with pytest.raises(ValidationError, match="can be chained"):
        caption_round.full_clean()


def discarded_for(reason_outcome: str, llm_client) -> tuple[Instance, CollectionRound]:
    instance = make_instance(captions=False)
    caption_round = make_round(task_type="caption", targets=[instance])
    caption_instance(round=caption_round, captions=["A blurry photo of something."])
    generate_and_route_references(llm=LLMRunParams(client=llm_client))
    caption_round.refresh_from_db()
    verify(round=caption_round.follow_up_round, outcomes=[reason_outcome] * 3)
    instance.refresh_from_db()
    assert instance.status == Instance.Status.DISCARDED
    return instance, caption_round


def test_recaptioning_a_caption_discard_replaces_the_caption_when_the_new_one_completes(fake_server, llm_client):
    instance, _ = discarded_for("caption_problem", llm_client)
    response_discard, _ = discarded_for("response_problem", llm_client)

    report = recaption_discarded(reasons=["caption"])

    assert report.instance_ids == [instance.pk]
    round = report.round
    assert (round.task_type, round.status) == ("caption", "open")
    instance.refresh_from_db()
    assert (instance.status, instance.discard_reason) == (Instance.Status.AWAITING_CAPTION, "")
    # The old caption stays current until the new one is chosen.
    assert instance.captions.get(is_current=True).text == "A blurry photo of something."

    caption_instance(round=round, captions=["A sharp photo: a red bicycle against a wall."])

    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE
    current = instance.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED, is_current=True)
    assert [c.text for c in current] == ["A sharp photo: a red bicycle against a wall."]
    assert instance.captions.filter(is_current=False, text="A blurry photo of something.").exists()
    response_discard.refresh_from_db()
    assert response_discard.status == Instance.Status.DISCARDED


def test_regenerating_a_response_discard_asks_afresh_and_opens_a_new_verification_item(fake_server, llm_client):
    instance, caption_round = discarded_for("response_problem", llm_client)
    first = ReferenceCandidate.objects.get(instance=instance)
    before = len(fake_server.completion_requests)

    report = regenerate_discarded(reasons=["response"], llm=LLMRunParams(client=llm_client))

    assert report.reset_instances == [instance.pk] and report.references.created == 1
    # Not served from the cache: a new, seeded request went out.
    [request] = fake_server.completion_requests[before:]
    assert request.body["seed"] == 1 and request.body["temperature"] == 0.7
    second = ReferenceCandidate.objects.filter(instance=instance).exclude(pk=first.pk).get()
    item = WorkItem.objects.get(candidate=second)
    assert item.round == caption_round.follow_up_round
    verify(round=item.round, outcomes=["correct"] * 3)
    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED
    assert instance.accepted_reference.candidate == second


def test_regenerating_without_a_server_changes_nothing(fake_server, llm_client, no_llm_settings):
    instance, _ = discarded_for("response_problem", llm_client)
    with pytest.raises(LLMNotConfigured):
        regenerate_discarded(reasons=["response"])
    instance.refresh_from_db()
    assert (instance.status, instance.discard_reason) == (Instance.Status.DISCARDED, "response")
