"""The round page edits the round's study information: owners save it (through annotation's form and
service), collaborators only read it, strangers get 404; bad text is refused and changes nothing.
The builder's expected seconds per task become the estimate workers see."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import round_builder
from annotation.models import CollectionRound
from tests.annotation.factories import make_project_outputs

pytestmark = pytest.mark.django_db

TEXT = "We compare answers to image questions.\n\nYou may stop at any time. <b>bold?</b>"


def a_round(project):
    make_project_outputs(project=project, instances=2, models=("alpha", "beta"))
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=None,
        settings={"name": "R", "task_type": "pairwise", "workers_per_item": 2, "reward_per_task": Decimal("0.50")},
        source="model_outputs", params={"sampler": "all_pairs", "seed": 1})
    return round


def consent_url(round):
    return reverse("cockpit:round-consent", kwargs={"slug": round.project.slug, "round_id": round.pk})


def page_url(round):
    return reverse("cockpit:round", kwargs={"slug": round.project.slug, "round_id": round.pk})


def test_owner_saves_the_study_information_and_it_shows_escaped(client, researcher, project):
    round = a_round(project)
    client.force_login(researcher)
    assert 'id="round-consent-none"' in client.get(page_url(round)).content.decode()
    response = client.post(consent_url(round), {"consent_text": TEXT})
    assert response.status_code == 302 and response["Location"] == page_url(round)
    round.refresh_from_db()
    assert round.consent_text == TEXT
    html = client.get(page_url(round)).content.decode()
    assert "<p>We compare answers to image questions.</p>" in html
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html and "<b>bold?</b>" not in html
    # Blank text removes it.
    client.post(consent_url(round), {"consent_text": "  "})
    round.refresh_from_db()
    assert round.consent_text == ""


def test_bad_text_is_refused_and_changes_nothing(client, researcher, project):
    round = a_round(project)
    client.force_login(researcher)
    client.post(consent_url(round), {"consent_text": TEXT})
    control = client.post(consent_url(round), {"consent_text": "bell\x07 ring"})
    assert control.status_code == 400 and "consent_text" in control.content.decode()
    too_long = client.post(consent_url(round), {"consent_text": "x" * 20001})
    assert too_long.status_code == 400
    assert "The study information is longer than 20000 characters." in too_long.content.decode()
    round.refresh_from_db()
    assert round.consent_text == TEXT


def test_collaborators_read_strangers_see_nothing(client, project, collaborator, make_researcher):
    round = a_round(project)
    client.force_login(collaborator)
    assert 'id="consent-form"' not in client.get(page_url(round)).content.decode()
    assert client.post(consent_url(round), {"consent_text": TEXT}).status_code == 403
    client.force_login(make_researcher("mallory"))
    assert client.post(consent_url(round), {"consent_text": TEXT}).status_code == 404
    assert client.get(consent_url(round)).status_code in (404, 405)
    round.refresh_from_db()
    assert round.consent_text == ""


def test_builder_expected_seconds_become_the_workers_estimate(client, researcher, project):
    make_project_outputs(project=project, instances=3, models=("alpha", "beta", "gamma"))
    client.force_login(researcher)
    data = {
        "kind": "pairwise:model_outputs", "action": "create", "source-sampler": "all_pairs", "source-seed": "7",
        "round-name": "Pairwise batch", "round-language": "en", "round-workers_per_item": "3",
        "round-reward_per_task": "0.30", "round-currency": "USD", "round-target_hourly_wage": "18.00",
        "round-time_limit_seconds": "600", "round-provider": "local", "round-expected_seconds": "75",
    }
    assert client.post(reverse("cockpit:round-new", args=[project.slug]), data).status_code == 302
    assert CollectionRound.objects.get().estimated_seconds_per_task == 75
