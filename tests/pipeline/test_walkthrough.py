"""The VisIT-Bench pipeline end to end through the crowd services and the fake LLM server:
instruction → caption → LLM reference → verification → verified or discarded, and the yield report."""
from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import CollectionRound, WorkItem
from annotation.pipeline import generate_and_route_references
from annotation.services.rounds import create_round
from datasets_app.models import AcceptedReference, Caption, Instance, ReferenceCandidate, Verification
from datasets_app.selectors import yield_report
from fakes.openai_server import message_text
from llm.params import LLMRunParams
from tests.annotation.factories import make_family, make_instance, make_round

from .builders import caption_instance, submit_all, verify

pytestmark = pytest.mark.django_db


def new_instance_through_the_crowd(*, instruction: str, image_url: str) -> Instance:
    family = make_family(name=f"Family for {instruction}")
    round = make_round(task_type="instruction_generation", targets=[family])
    [assignment] = submit_all(round=round, answers=[{
        "instruction": instruction, "license": "CC-BY-4.0", "creator": "Ada",
        "source_url": "https://openverse.org/image/1", "image_url": image_url,
    }])
    return Instance.objects.get(pk=assignment.result["instance_id"])


def test_from_instruction_to_verified_reference(fake_server, llm_client):
    instance = new_instance_through_the_crowd(instruction="Which piece can the white king take?",
                                              image_url="https://images.example.org/chess.png")
    assert instance.status == Instance.Status.AWAITING_CAPTION
    caption_round = make_round(task_type="caption", targets=[instance], language="en",
                               reward_per_task=Decimal("0.40"), time_limit_seconds=900)
    caption_instance(round=caption_round, captions=["A chessboard: white king on e1, black rook on e2."])
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE

    report = generate_and_route_references(llm=LLMRunParams(client=llm_client))

    [request] = fake_server.completion_requests
    prompt = message_text(request.body["messages"][-1]["content"])
    assert "A chessboard: white king on e1, black rook on e2." in prompt
    assert "Which piece can the white king take?" in prompt
    assert report.references.created == 1
    # A verification round following the caption round's settings, three workers per candidate, open.
    caption_round.refresh_from_db()
    verification_round = caption_round.follow_up_round
    assert verification_round.task_type == "verification"
    assert verification_round.status == CollectionRound.Status.OPEN
    assert verification_round.workers_per_item == 3
    assert (verification_round.reward_per_task, verification_round.time_limit_seconds) == (Decimal("0.40"), 900)
    assert report.routing.items == {verification_round.pk: [verification_round.items.get().pk]}
    assert verification_round.items.get().candidate.instance == instance

    verify(round=verification_round, outcomes=["correct", "correct", "response_problem"])

    instance.refresh_from_db()
    assert instance.status == Instance.Status.VERIFIED
    reference = AcceptedReference.objects.get(instance=instance)
    assert reference.text == ReferenceCandidate.objects.get(instance=instance).text
    assert reference.origin == AcceptedReference.Origin.VERIFIED_CANDIDATE
    assert yield_report()["splits"]["single_image"] == {
        "candidates": 1, "kept_pct": 100.0, "caption_problem_pct": 0.0, "response_problem_pct": 0.0,
        "harmful_pct": 0.0,
    }


@pytest.mark.parametrize(
    ("outcomes", "harmful", "reason"),
    [
        (["caption_problem", "caption_problem", "correct"], [False] * 3, Instance.DiscardReason.CAPTION),
        (["response_problem", "correct", "response_problem"], [False] * 3, Instance.DiscardReason.RESPONSE),
        (["correct", "correct", "correct"], [True, True, False], Instance.DiscardReason.HARMFUL),
        (["correct", "caption_problem", "response_problem"], [False] * 3, Instance.DiscardReason.UNVERIFIED),
    ],
)
def test_verification_outcomes_discard_with_the_reason(fake_server, llm_client, outcomes, harmful, reason):
    instance = make_instance(captions=False)
    caption_round = make_round(task_type="caption", targets=[instance])
    caption_instance(round=caption_round, captions=["A cat on a mat."])
    generate_and_route_references(llm=LLMRunParams(client=llm_client))
    caption_round.refresh_from_db()

    verify(round=caption_round.follow_up_round, outcomes=outcomes, harmful=harmful)

    instance.refresh_from_db()
    assert (instance.status, instance.discard_reason) == (Instance.Status.DISCARDED, reason)
    assert not AcceptedReference.objects.filter(instance=instance).exists()


def test_the_yield_report_counts_verdicts_collected_on_the_platform_per_split(fake_server, llm_client):
    singles = [make_instance(captions=False) for _ in range(4)]
    multi = make_instance(images=2, captions=False)
    caption_round = make_round(task_type="caption", targets=[*singles, multi])
    for instance in singles:
        caption_instance(round=caption_round, captions=[f"Caption of {instance.instruction}"])
    caption_instance(round=caption_round, captions=["left picture", "right picture"])
    generate_and_route_references(llm=LLMRunParams(client=llm_client))
    caption_round.refresh_from_db()
    verification_round = caption_round.follow_up_round
    assert verification_round.items.count() == 5

    # Items are handed out in order: the four single-image candidates, then the multi-image one.
    for outcome in ["correct", "correct", "caption_problem", "response_problem", "response_problem"]:
        verify(round=verification_round, outcomes=[outcome] * 3)

    report = yield_report()["splits"]
    assert report["single_image"] == {"candidates": 4, "kept_pct": 50.0, "caption_problem_pct": 25.0,
                                      "response_problem_pct": 25.0, "harmful_pct": 0.0}
    assert report["multi_image"]["candidates"] == 1 and report["multi_image"]["response_problem_pct"] == 100.0
    assert report["all"]["candidates"] == 5
    assert Verification.objects.filter(is_aggregate=True, source="crowd").count() == 5


def test_candidates_are_routed_once_and_into_the_same_follow_up_round(fake_server, llm_client):
    first, second = make_instance(captions=False), make_instance(captions=False)
    caption_round = make_round(task_type="caption", targets=[first, second])
    caption_instance(round=caption_round, captions=["one"])
    generate_and_route_references(llm=LLMRunParams(client=llm_client))
    caption_instance(round=caption_round, captions=["two"])

    report = generate_and_route_references(llm=LLMRunParams(client=llm_client))

    caption_round.refresh_from_db()
    assert CollectionRound.objects.filter(task_type="verification").count() == 1
    assert report.routing.items == {caption_round.follow_up_round_id: [WorkItem.objects.get(candidate__instance=second).pk]}
    assert WorkItem.objects.filter(candidate__instance=first).count() == 1


def test_instances_without_a_caption_round_get_a_new_verification_round(fake_server, llm_client):
    instance = make_instance()  # captions entered by a researcher
    instance.status = Instance.Status.AWAITING_REFERENCE
    instance.save()
    report = generate_and_route_references(llm=LLMRunParams(client=llm_client))
    [round_id] = report.routing.items
    round = CollectionRound.objects.get(pk=round_id)
    assert (round.task_type, round.workers_per_item, round.status) == ("verification", 3, "open")
    assert report.routing.opened_rounds == [round_id]


def test_an_explicit_verification_round_receives_the_items(fake_server, llm_client):
    instance = make_instance()
    instance.status = Instance.Status.AWAITING_REFERENCE
    instance.save()
    chosen = create_round(name="My verification", task_type="verification", workers_per_item=5)
    report = generate_and_route_references(verification_round=chosen, llm=LLMRunParams(client=llm_client))
    assert report.routing.items == {chosen.pk: [chosen.items.get().pk]}
    chosen.refresh_from_db()
    assert chosen.status == CollectionRound.Status.DRAFT  # the researcher's round is left as it was
    assert Caption.objects.filter(instance=instance, is_current=True).count() == 1
