"""Provider workers (Prolific, MTurk) see a round's study information before their first task; their
answer is posted back with a token signed for the round and worker; the dry run's workers agree."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation import consent
from annotation.models import Assignment, ConsentDecision, Worker
from providers import services
from providers.dry_run import rehearse
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider

pytestmark = pytest.mark.django_db
SANDBOX = "https://workersandbox.mturk.com"
STUDY = "Please read: we store your answers.\n\nYou may stop at any time."


def consent_token(html: str) -> str:
    return re.search(r'name="consent_token" value="([^"]+)"', html).group(1)


def test_prolific_participant_agrees_before_the_task(prolific_fake, round_factory):
    round = round_factory(items=2, consent_text=STUDY)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    study = Publication.objects.get(round=round, provider="prolific").external_id
    session = prolific_fake.start_submission(study, participant_id="PID1")["id"]  # a participant Prolific knows
    url = f"/work/prolific/{round.pk}/?PROLIFIC_PID=PID1&STUDY_ID={study}&SESSION_ID={session}"
    client = Client(enforce_csrf_checks=True)  # the answer's own token protects it, not a cookie
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "we store your answers." in html and 'id="task-form"' not in html
    assert not Assignment.objects.exists()

    assert client.post(url, {"decision": "accept", "consent_token": "forged"}).status_code == 403
    other_worker = Worker.objects.create(provider="prolific", external_id="PID2")
    stolen = client.get(f"/work/prolific/{round.pk}/?PROLIFIC_PID=PID2&STUDY_ID={study}&SESSION_ID=SESSION2")
    assert client.post(url, {"decision": "accept", "consent_token": consent_token(stolen.content.decode())}
                       ).status_code == 403
    assert not ConsentDecision.objects.exists()
    assert client.post(url, {"decision": "sure", "consent_token": consent_token(html)}).status_code == 400

    agreed = client.post(url, {"decision": "accept", "consent_token": consent_token(html)})
    assert agreed.status_code == 302 and agreed["Location"] == url
    decision = ConsentDecision.objects.get()
    assert decision.accepted and decision.worker.external_id == "PID1"
    task = client.get(url)
    assert task.status_code == 200 and 'id="task-form"' in task.content.decode()
    assert Assignment.objects.filter(worker__external_id="PID1").count() == 1
    assert not Assignment.objects.filter(worker=other_worker).exists()


def test_prolific_participant_who_declines_gets_no_task(prolific_fake, round_factory):
    round = round_factory(items=1, consent_text=STUDY)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    study = Publication.objects.get(round=round, provider="prolific").external_id
    url = f"/work/prolific/{round.pk}/?PROLIFIC_PID=PID1&STUDY_ID={study}&SESSION_ID=SESSION1"
    client = Client()
    token = consent_token(client.get(url).content.decode())
    declined = client.post(url, {"decision": "decline", "consent_token": token})
    assert declined.status_code == 200 and 'id="consent-declined"' in declined.content.decode()
    assert not ConsentDecision.objects.get().accepted
    assert 'id="task-form"' not in client.get(url).content.decode()
    assert not Assignment.objects.exists()


def test_mturk_worker_agrees_inside_the_frame(mturk_fake, round_factory):
    round = round_factory(items=1, consent_text=STUDY)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AWORKER1")
    url = (f"/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit.hit_id}&workerId=AWORKER1"
           f"&turkSubmitTo={SANDBOX}")
    client = Client(enforce_csrf_checks=True)
    page = client.get(url)
    assert page.status_code == 200 and "X-Frame-Options" not in page.headers
    assert 'id="task-form"' not in page.content.decode()
    agreed = client.post(url, {"decision": "accept", "consent_token": consent_token(page.content.decode())})
    assert agreed.status_code == 302
    assert 'id="task-form"' in client.get(url).content.decode()
    assert Assignment.objects.get().worker.external_id == "AWORKER1"


@pytest.mark.parametrize("provider_name", ["local", "prolific", "mturk"])
def test_dry_run_workers_agree_to_the_study_information(provider_name, round_factory, prolific_fake, mturk_fake):
    round = round_factory(items=2, workers_per_item=1, consent_text=STUDY)
    report = rehearse(round=round, provider_name=provider_name, seed=1)
    assert report.tasks_submitted == 2
    # The rehearsal keeps nothing, its consent decisions included.
    assert not ConsentDecision.objects.exists()
    assert consent.consent_required(round=round)


def test_provider_pages_carry_the_broken_image_placeholder(mturk_fake, round_factory):
    round = round_factory(items=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    preview = Client().get(f"/work/mturk/{round.pk}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={hit.hit_id}")
    html = preview.content.decode()
    assert preview.status_code == 200 and 'id="image-report"' in html and 'data-url=""' in html
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AWORKER1")
    page = Client().get(f"/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit.hit_id}"
                        f"&workerId=AWORKER1&turkSubmitTo={SANDBOX}")
    assignment = Assignment.objects.get()
    html = page.content.decode()
    assert f'data-url="/api/providers/assignments/{assignment.pk}/report-image/"' in html
    assert re.search(r'id="image-report"[^>]*data-task-token="[^"]+"', html, re.S)
