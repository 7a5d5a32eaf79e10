"""Prolific eligibility: language and approval-rate filters go with the study, the fake checks
their shape, and a participant counts as a speaker only when a language filter was applied."""
from __future__ import annotations

import pytest

from annotation.errors import NotQualified
from providers import services
from providers.base import ProviderError
from providers.models import Publication
from providers.prolific.provider import ProlificProvider, eligibility_filters

pytestmark = pytest.mark.django_db

JAPANESE_CHOICE = "42"  # a choice id as Prolific's filters list would give it


def publish(round, **options):
    return services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0),
                                  options=options)


def test_language_and_approval_filters_are_sent_with_the_study(prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="1.50", language="ja",
                          qualification_rules={"language_matched": True})
    publish(round, first_language_ids=[JAPANESE_CHOICE], min_approval_rate=95)
    body = prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]
    assert body["filters"] == [
        {"filter_id": "first-language", "selected_values": [JAPANESE_CHOICE]},
        {"filter_id": "approval_rate", "selected_range": {"lower": 95, "upper": 100}},
    ]
    participant = services.get_or_create_provider_worker(provider="prolific", external_id="a" * 24)
    study = Publication.objects.get(round=round).external_id
    session = prolific_fake.start_submission(study, participant_id="a" * 24)["id"]  # a participant Prolific knows
    assignment = services.request_provider_assignment(round=round, worker=participant,
                                                      provider_assignment_id=session, provider_task_id=study)
    assert assignment is not None
    participant.refresh_from_db()
    assert participant.languages == ["ja"]


def test_without_a_language_filter_a_participant_is_no_speaker(prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="1.50", language="ja",
                          qualification_rules={"language_matched": True})
    publish(round, min_approval_rate=90)
    body = prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]
    assert [f["filter_id"] for f in body["filters"]] == ["approval_rate"]
    participant = services.get_or_create_provider_worker(provider="prolific", external_id="b" * 24)
    with pytest.raises(NotQualified, match="work in Japanese"):
        services.request_provider_assignment(round=round, worker=participant,
                                             provider_assignment_id="t" * 24, provider_task_id="study")
    participant.refresh_from_db()
    assert participant.languages == []


def test_a_study_without_options_sends_no_filters(prolific_fake, round_factory):
    publish(round_factory(items=1, workers_per_item=1, reward="1.50"))
    assert "filters" not in prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]
    assert eligibility_filters({"fluent_language_ids": [7]}) == [
        {"filter_id": "fluent-languages", "selected_values": ["7"]}]


@pytest.mark.parametrize("filters, message", [
    ([{"filter_id": "first_language", "selected_values": ["1"]}], "unknown filter_id"),
    ([{"filter_id": "first-language", "selected_values": [1]}], "selected_values must be a non-empty list"),
    ([{"filter_id": "approval_rate", "selected_values": ["95"]}], "selected_range must give lower"),
    ([{"filter_id": "approval_rate", "selected_range": {"min": 95}}], "selected_range must give lower"),
])
def test_the_fake_refuses_filters_prolific_would_refuse(prolific_fake, filters, message):
    provider = ProlificProvider(retry_pause=0)
    body = {"name": "s", "description": "d", "external_study_url":
            "https://x.example.org/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
            "prolific_id_option": "url_parameters", "completion_codes": [
                {"code": "C0DE1234", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
            "total_available_places": 1, "estimated_completion_time": 1, "reward": 100, "filters": filters}
    with pytest.raises(ProviderError, match=message):
        provider._request("POST", "studies/", json=body)


def test_publish_round_takes_the_filters_on_the_command_line(prolific_fake, round_factory):
    from django.core.management import call_command

    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    call_command("publish_round", str(round.pk), "--provider", "prolific", "--fluent-language-id", "42",
                 "--fluent-language-id", "43", "--min-approval-rate", "98")
    assert prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]["filters"] == [
        {"filter_id": "fluent-languages", "selected_values": ["42", "43"]},
        {"filter_id": "approval_rate", "selected_range": {"lower": 98, "upper": 100}},
    ]
