"""Qualification tests from gold items, accepted by the fake's QuestionForm/AnswerKey validation."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command

from fakes.mturk import RehearsalError
from providers import services
from providers.base import ProviderError, ProviderRefused
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from providers.mturk.qualification import ANSWER_KEY_NS, create_qualification_test, gold_questions

pytestmark = pytest.mark.django_db


def test_gold_items_become_a_scored_test_that_hits_can_require(mturk_fake, round_factory, capsys):
    round = round_factory(items=3, workers_per_item=1, gold_answers={0: {"winner": "b"}, 2: {"winner": "a"}})
    call_command("mturk_qualification_test", str(round.pk), "--name", "Pairwise judges <v1>",
                 "--description", "Pick the better response & explain nothing.", "--duration-seconds", "900")
    type_id = capsys.readouterr().out.strip()
    created = mturk_fake.calls("CreateQualificationType")[0].params
    assert created["TestDurationInSeconds"] == 900
    assert "Pairwise judges &lt;v1&gt;" in created["Test"]
    key = ET.fromstring(created["AnswerKey"])
    expected = [option.text for option in key.iter(f"{{{ANSWER_KEY_NS}}}SelectionIdentifier")]
    questions = gold_questions(round)
    assert expected == [question.expected for question in questions]
    gold_items = list(round.items.filter(is_gold=True).order_by("position"))
    for question, item in zip(questions, gold_items, strict=True):
        winner = item.output_a if item.gold_answer["winner"] == "a" else item.output_b
        # The expected choice is the position where the gold winner's text is shown.
        assert f"Response {question.expected}: {winner.text}" in question.text
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0),
                           options={"qualification_type_id": type_id, "qualification_min_score": 80})
    requirement = mturk_fake.calls("CreateHITType")[0].params["QualificationRequirements"][0]
    assert requirement == {"QualificationTypeId": type_id, "Comparator": "GreaterThanOrEqualTo",
                           "IntegerValues": [80], "ActionsGuarded": "DiscoverPreviewAndAccept"}
    assert Publication.objects.get().details["options"]["qualification_type_id"] == type_id
    # A worker without the qualification cannot take the HIT; one with a passing score can.
    hit_id = HIT.objects.order_by("pk").first().hit_id
    with pytest.raises(RehearsalError):
        mturk_fake.accept_assignment(hit_id, "ANOQUAL")
    worker = services.get_or_create_provider_worker(provider="mturk", external_id="APASSED")
    MTurkProvider(retry_pause=0).qualify(worker=worker, qualification=type_id, value=80)
    assert mturk_fake.accept_assignment(hit_id, "APASSED")


def test_the_question_does_not_give_away_the_side(round_factory):
    """Answer ids are positions, and the side shown first varies from item to item."""
    round = round_factory(items=24, workers_per_item=1, gold_answers={n: {"winner": "b"} for n in range(24)})
    questions = gold_questions(round)
    assert {key for question in questions for key, _label in question.choices} == {"1", "2"}
    expected = [question.expected for question in questions]
    assert set(expected) == {"1", "2"}, "side b was shown in the same place in all 24 questions"


def test_round_without_scorable_gold_is_refused(mturk_fake, round_factory):
    round = round_factory(items=1)
    assert gold_questions(round) == []
    with pytest.raises(ProviderRefused):
        create_qualification_test(provider=MTurkProvider(retry_pause=0), round=round, name="x", description="y",
                                  duration_seconds=60)


def test_a_qualification_type_whose_answer_is_lost_is_not_sent_again_into_an_already_exists_refusal(
    mturk_fake, round_factory
):
    """CreateQualificationType carries no token: after a lost answer it may have been made, so it is
    not repeated (a repeat would be refused as a duplicate name, a refusal that is not true)."""
    round = round_factory(items=2, workers_per_item=1, gold_answers={0: {"winner": "b"}})
    mturk_fake.drop_next(operation="CreateQualificationType")
    with pytest.raises(ProviderError) as refused:
        create_qualification_test(provider=MTurkProvider(retry_pause=0), round=round, name="x", description="y",
                                  duration_seconds=60)
    assert not isinstance(refused.value, ProviderRefused)
    assert "may have taken effect" in refused.value.message
    assert len(mturk_fake.calls("CreateQualificationType")) == 1
