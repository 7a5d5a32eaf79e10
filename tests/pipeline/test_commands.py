"""The LLM steps and the new-round steps as management commands."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import CollectionRound
from datasets_app.models import Instance, ReferenceCandidate
from llm.models import LLMRun
from tests.annotation.factories import make_instance, make_round

from .builders import caption_instance, verify

pytestmark = pytest.mark.django_db


def run(name: str, *args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def captioned(count: int = 1) -> tuple[list[Instance], CollectionRound]:
    instances = [make_instance(captions=False) for _ in range(count)]
    caption_round = make_round(task_type="caption", targets=instances)
    for instance in instances:
        caption_instance(round=caption_round, captions=[f"Caption for {instance.instruction}"])
    return instances, caption_round


def test_generate_references_command_creates_candidates_and_verification_items(llm_settings, fake_server):
    instances, caption_round = captioned(2)

    out, err = run("generate_references")

    assert "2 instances: 2 reference candidates created, 0 failed" in out
    caption_round.refresh_from_db()
    assert f"round {caption_round.follow_up_round_id}: 2 items" in out
    assert ReferenceCandidate.objects.count() == 2
    out, _ = run("generate_references")
    assert "0 instances" in out and ReferenceCandidate.objects.count() == 2


@pytest.mark.parametrize("command", [["generate_references"], ["regenerate_references"],
                                     ["generate_outputs", "--model", "m"]])
def test_llm_commands_say_what_to_set_without_a_server(no_llm_settings, command):
    captioned(1)
    with pytest.raises(CommandError) as raised:
        run(*command)
    message = str(raised.value)
    assert "LLM is not configured" in message
    for variable in ("LLM_BASE_URL", "OPENAI_BASE_URL", "LLM_API_KEY"):
        assert variable in message
    assert not LLMRun.objects.exists() and not ReferenceCandidate.objects.exists()


def test_generate_references_command_refuses_bad_options(llm_settings):
    with pytest.raises(CommandError, match="--instances: no instance with id 999"):
        run("generate_references", "--instances", "999")
    with pytest.raises(CommandError, match="--budget must be"):
        run("generate_references", "--budget", "lots")
    caption_round = make_round(task_type="caption", targets=[make_instance(captions=False)])
    with pytest.raises(CommandError, match=f"round {caption_round.pk} is a caption round"):
        run("generate_references", "--verification-round", str(caption_round.pk))


def test_generate_references_command_reports_the_budget_stop(llm_settings, fake_server):
    captioned(3)
    out, err = run("generate_references", "--budget", "0.0055")
    assert "1 reference candidate created, 2 failed" in out
    assert "The budget was reached" in out
    assert err.count("still awaiting a reference") == 2


def test_recaption_and_regenerate_commands(llm_settings, fake_server):
    (caption_bad, response_bad), caption_round = captioned(2)
    run("generate_references")
    caption_round.refresh_from_db()
    verify(round=caption_round.follow_up_round, outcomes=["caption_problem"] * 3)
    verify(round=caption_round.follow_up_round, outcomes=["response_problem"] * 3)

    out, _ = run("recaption_round", "--from-discarded", "caption", "--workers-per-item", "2", "--reward", "0.75")
    round = CollectionRound.objects.filter(task_type="caption").latest("id")
    assert f"caption round {round.pk}" in out and "with 1 instance" in out
    assert (round.workers_per_item, str(round.reward_per_task), round.status) == (2, "0.75", "open")
    assert list(round.items.values_list("instance_id", flat=True)) == [caption_bad.pk]

    out, _ = run("regenerate_references", "--discarded", "response")
    assert "1 discarded instances back to awaiting a reference" in out
    response_bad.refresh_from_db()
    assert response_bad.status == Instance.Status.AWAITING_VERIFICATION
    assert response_bad.reference_candidates.count() == 2

    with pytest.raises(CommandError, match="no instances discarded for: response"):
        run("regenerate_references", "--discarded", "response")
    with pytest.raises(CommandError, match="no instances discarded for: caption"):
        run("recaption_round")
    with pytest.raises(CommandError, match="--reward must be a non-negative amount, got '-1'"):
        run("recaption_round", "--reward", "-1")
