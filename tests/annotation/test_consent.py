"""Study information and consent: shown before a worker's first task of a round, the decision recorded
with its time, and no task handed out (page or API) before the worker agrees."""
import pytest
from django.test import Client

from annotation import consent
from annotation.admin import CollectionRoundForm
from annotation.errors import ConsentRequired
from annotation.forms import ConsentTextForm
from annotation.models import Assignment, ConsentDecision
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker, make_worker_user

pytestmark = pytest.mark.django_db

STUDY = "This study asks you to compare answers.\n\nYou may stop at any time. <b>Contact</b>: study@example.org"


def consent_round(text: str = STUDY, **options):
    targets = [tuple(make_outputs(instance=make_instance())) for _ in range(2)]
    return make_round(task_type="pairwise", targets=targets, consent_text=text, **options)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_no_task_before_the_worker_agrees():
    round = consent_round()
    worker = make_worker()
    with pytest.raises(ConsentRequired):
        request_assignment(round=round, worker=worker)
    consent.record_decision(round=round, worker=worker, accepted=False)
    with pytest.raises(ConsentRequired):
        request_assignment(round=round, worker=worker)
    assert not Assignment.objects.exists()
    decision = consent.record_decision(round=round, worker=worker, accepted=True)
    assert decision.accepted and decision.decided_at is not None
    assert ConsentDecision.objects.count() == 1
    assert request_assignment(round=round, worker=worker) is not None


def test_a_round_without_consent_text_needs_none():
    round = consent_round(text="   ")
    assert round.consent_text == ""
    assert request_assignment(round=round, worker=make_worker()) is not None


def test_changed_text_is_asked_again():
    round = consent_round()
    worker = make_worker()
    consent.record_decision(round=round, worker=worker, accepted=True)
    round = consent.set_consent_text(round=round, text=STUDY + "\n\nNew: we also record task times.")
    assert not consent.has_accepted(round=round, worker=worker)
    with pytest.raises(ConsentRequired):
        request_assignment(round=round, worker=worker)


def test_page_shows_the_study_information_first_then_the_task():
    round = consent_round()
    user = make_worker_user()
    client = client_for(user)
    first = client.get(f"/work/rounds/{round.pk}/")
    assert first.status_code == 302 and first["Location"] == f"/work/rounds/{round.pk}/consent/"
    page = client.get(first["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    # Paragraphs, and the researcher's text escaped, never HTML.
    assert "<p>This study asks you to compare answers.</p>" in html
    assert "&lt;b&gt;Contact&lt;/b&gt;" in html and "<b>Contact</b>" not in html
    assert not Assignment.objects.exists()

    agreed = client.post(f"/work/rounds/{round.pk}/consent/", {"decision": "accept"})
    assert agreed.status_code == 302 and agreed["Location"] == f"/work/rounds/{round.pk}/"
    decision = ConsentDecision.objects.get()
    assert decision.accepted and decision.worker.user == user and decision.text_sha256 == consent.text_hash(STUDY)
    task = client.get(agreed["Location"])
    assert task.status_code == 200 and 'id="task-form"' in task.content.decode()
    # The consent page of an accepted round is not asked again; the task comes straight away.
    assert client.get(f"/work/rounds/{round.pk}/").status_code == 200


def test_declining_is_recorded_and_gives_no_task():
    round = consent_round()
    user = make_worker_user()
    client = client_for(user)
    declined = client.post(f"/work/rounds/{round.pk}/consent/", {"decision": "decline"})
    assert declined.status_code == 200 and 'id="consent-declined"' in declined.content.decode()
    assert not ConsentDecision.objects.get().accepted
    assert client.get(f"/work/rounds/{round.pk}/")["Location"] == f"/work/rounds/{round.pk}/consent/"
    assert not Assignment.objects.exists()


def test_bad_consent_answers_are_refused_and_change_nothing():
    round = consent_round()
    client = client_for(make_worker_user())
    assert client.post(f"/work/rounds/{round.pk}/consent/", {"decision": "maybe"}).status_code == 400
    assert client.post(f"/work/rounds/{round.pk}/consent/", {}).status_code == 400
    assert not ConsentDecision.objects.exists()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_worker_user())
    assert strict.post(f"/work/rounds/{round.pk}/consent/", {"decision": "accept"}).status_code == 403
    assert not ConsentDecision.objects.exists()


def test_consent_page_refuses_workers_the_round_is_not_for():
    round = consent_round(qualification_rules={"providers": ["prolific"]})
    response = client_for(make_worker_user()).post(f"/work/rounds/{round.pk}/consent/", {"decision": "accept"})
    assert response.status_code == 403
    assert not ConsentDecision.objects.exists()


def test_api_hands_out_no_task_before_consent():
    round = consent_round()
    user = make_worker_user()
    client = client_for(user)
    refused = client.post(f"/api/work/rounds/{round.pk}/next/")
    assert refused.status_code == 403
    assert "study information" in refused.json()["detail"]
    assert not Assignment.objects.exists()
    consent.record_decision(round=round, worker=get_or_create_local_worker(user=user), accepted=True)
    assert client.post(f"/api/work/rounds/{round.pk}/next/").json()["assignment"] is not None


def test_researcher_form_cleans_and_saves_through_the_service():
    round = consent_round(text="")
    form = ConsentTextForm({"consent_text": "  Paragraph one.\n\nParagraph two.  "}, instance=round)
    assert form.is_valid()
    saved = form.save()
    assert saved.consent_text == "Paragraph one.\n\nParagraph two."
    bad = ConsentTextForm({"consent_text": "x" * (consent.MAX_CONSENT_CHARS + 1)}, instance=round)
    assert not bad.is_valid() and "consent_text" in bad.errors
    with pytest.raises(consent.InvalidConsentText):
        consent.set_consent_text(round=round, text="bell\x07")
    round.refresh_from_db()
    assert round.consent_text == "Paragraph one.\n\nParagraph two."


def test_admin_round_form_applies_the_same_cleaning():
    round = consent_round(text="")
    data = {field: getattr(round, field) for field in ("name", "task_type", "language", "workers_per_item",
                                                        "reward_per_task", "currency", "target_hourly_wage",
                                                        "time_limit_seconds", "status")}
    form = CollectionRoundForm({**data, "qualification_rules": "{}", "consent_text": "bell\x07"}, instance=round)
    assert not form.is_valid() and "consent_text" in form.errors
    form = CollectionRoundForm({**data, "qualification_rules": "{}", "consent_text": "Read this. "}, instance=round)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["consent_text"] == "Read this."
