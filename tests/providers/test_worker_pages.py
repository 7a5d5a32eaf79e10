"""Entry pages for MTurk and Prolific workers and their cookie-free submit endpoint."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.models import Assignment, Worker
from providers import services
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider, completion_code
from providers.worker_access import assignment_for_token, task_token

pytestmark = pytest.mark.django_db
SANDBOX = "https://workersandbox.mturk.com"


@pytest.fixture
def published_hit(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.select_related("item").order_by("item__position").first()
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AWORKER1")
    return round, hit, assignment_id


def mturk_url(round, hit, assignment_id, worker="AWORKER1", submit_to=SANDBOX):
    return (f"/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit.hit_id}&workerId={worker}"
            f"&turkSubmitTo={submit_to}")


def test_preview_shows_the_task_read_only_and_reserves_nothing(published_hit):
    round, hit, _ = published_hit
    response = Client().get(f"/work/mturk/{round.pk}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={hit.hit_id}")
    assert response.status_code == 200
    assert "accept the HIT to start" in response.content.decode()
    assert "<fieldset disabled>" in response.content.decode()
    assert "X-Frame-Options" not in response.headers
    assert not Assignment.objects.exists()


def test_mturk_page_assigns_the_hits_item_and_can_be_framed(published_hit):
    round, hit, assignment_id = published_hit
    response = Client().get(mturk_url(round, hit, assignment_id))
    assert response.status_code == 200
    assert "X-Frame-Options" not in response.headers
    assert not response.cookies  # nothing depends on cookies inside MTurk's frame
    assignment = Assignment.objects.get()
    assert (assignment.item_id, assignment.provider_assignment_id, assignment.provider_task_id) == (
        hit.item_id, assignment_id, hit.hit_id)
    assert assignment.worker == Worker.objects.get(provider="mturk", external_id="AWORKER1")
    page = response.content.decode()
    assert f'action="{SANDBOX}/mturk/externalSubmit"' in page
    # The page carries a token for exactly this assignment and worker (signed with a timestamp, so
    # read it from the page rather than signing again).
    token = re.search(r'data-task-token="([^"]+)"', page).group(1)
    assert assignment_for_token(token=token, assignment_id=assignment.pk) == (assignment, assignment.worker)
    # A reload gives the same assignment back.
    Client().get(mturk_url(round, hit, assignment_id))
    assert Assignment.objects.count() == 1


def test_mturk_page_refuses_foreign_submit_hosts(published_hit):
    round, hit, assignment_id = published_hit
    response = Client().get(mturk_url(round, hit, assignment_id, submit_to="https://evil.example.org"))
    assert response.status_code == 400
    assert not Assignment.objects.exists()


def test_submit_needs_the_signed_token_of_that_assignment(published_hit):
    round, hit, assignment_id = published_hit
    Client().get(mturk_url(round, hit, assignment_id))
    assignment = Assignment.objects.get()
    client = Client(enforce_csrf_checks=True)
    url = f"/api/providers/assignments/{assignment.pk}/submit/"
    assert client.post(url, {"choice": "left"}).status_code == 403
    assert client.post(url, {"choice": "left"}, headers={"X-Task-Token": "forged"}).status_code == 403
    other = Assignment.objects.create(round=round, item=assignment.item, worker=Worker.objects.create(
        provider="mturk", external_id="AOTHER"), accepted_at=assignment.accepted_at, expires_at=assignment.expires_at)
    others_token = task_token(assignment=other)
    assert client.post(url, {"choice": "left"}, headers={"X-Task-Token": others_token}).status_code == 403
    token = task_token(assignment=assignment)
    first = client.post(url, {"choice": "left"}, headers={"X-Task-Token": token})
    assert first.status_code == 201 and first.json()["payload"] == {"choice": "left"}
    assert client.post(url, {"choice": "left"}, headers={"X-Task-Token": token}).status_code == 200
    assert client.post(url, {"choice": "right"}, headers={"X-Task-Token": token}).status_code == 409
    # Reloading after the save hands over to MTurk at once, with the stored answers.
    page = Client().get(mturk_url(round, hit, assignment_id)).content.decode()
    assert 'data-auto="true"' in page and "&quot;choice&quot;:&quot;left&quot;" in page


def test_prolific_page_saves_then_sends_the_participant_back_with_the_code(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    study_id = Publication.objects.get().external_id
    started = prolific_fake.start_submission(study_id, "a" * 24)
    path = started["study_url"].replace("https://crowdbench.example.org", "")
    response = Client().get(path)
    assert response.status_code == 200
    assert completion_code(round) not in response.content.decode()  # only after the work is saved
    assignment = Assignment.objects.get()
    assert assignment.provider_assignment_id == started["id"]
    saved = Client().post(f"/api/providers/assignments/{assignment.pk}/submit/", {"choice": "right"},
                          headers={"X-Task-Token": task_token(assignment=assignment)})
    assert saved.json()["redirect_url"] == f"https://app.prolific.com/submissions/complete?cc={completion_code(round)}"
    again = Client().get(path)
    assert again.status_code == 302 and again["Location"] == saved.json()["redirect_url"]
    wrong_study = Client().get(path.replace(study_id, "0" * 24))
    assert wrong_study.status_code == 404


def test_pages_speak_the_rounds_language(mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, language="ja")
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    preview = Client().get(f"/work/mturk/{round.pk}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={hit.hit_id}")
    assert "プレビューです。始めるには HIT を受諾してください。" in preview.content.decode()
    broken = Client().get(f"/work/mturk/{round.pk}/?assignmentId=ABC&hitId={hit.hit_id}&workerId=A1&turkSubmitTo=x")
    assert broken.status_code == 400 and "Mechanical Turk から開いてください" in broken.content.decode()


def test_a_known_workers_refusal_speaks_their_language(mturk_fake, round_factory):
    """Once the link names the worker, an English-only worker reads a Japanese round's refusal in English."""
    round = round_factory(items=2, workers_per_item=1, language="ja")
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hits = HIT.objects.order_by("item__position")
    for hit, external_id, languages, refusal in (
            (hits[0], "AENGLISH1", ["en"], "Your account may not take tasks."),
            (hits[1], "AUNSTATED1", [], "あなたのアカウントではタスクを受けられません。")):
        worker = services.get_or_create_provider_worker(provider="mturk", external_id=external_id)
        Worker.objects.filter(pk=worker.pk).update(languages=languages, is_blocked=True)
        response = Client().get(mturk_url(round, hit, mturk_fake.accept_assignment(hit.hit_id, external_id),
                                          worker=external_id))
        assert response.status_code == 403 and refusal in response.content.decode()


def break_pair(item) -> None:
    """Point side b at another instance's output, past every check (as a raw database edit would)."""
    from annotation.models import WorkItem
    from tests.annotation.factories import make_instance, make_outputs

    other = make_outputs(instance=make_instance(), models=("gamma", "delta"))[0]
    WorkItem.objects.filter(pk=item.pk).update(output_b=other)


def test_mturk_preview_of_a_broken_item_is_a_clean_refusal(published_hit):
    round, hit, _ = published_hit
    break_pair(hit.item)
    response = Client().get(f"/work/mturk/{round.pk}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={hit.hit_id}")
    assert response.status_code == 409 and "cannot be shown" in response.content.decode()
    assert not Assignment.objects.exists()


def test_provider_task_page_whose_item_broke_is_refused_and_given_back(published_hit):
    round, hit, assignment_id = published_hit
    assert Client().get(mturk_url(round, hit, assignment_id)).status_code == 200
    break_pair(hit.item)
    response = Client().get(mturk_url(round, hit, assignment_id))
    assert response.status_code == 409 and "given back" in response.content.decode()
    assert Assignment.objects.get().status == Assignment.Status.RETURNED


def test_prolific_page_of_a_broken_item_is_refused_not_a_500(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    started = prolific_fake.start_submission(Publication.objects.get(round=round).external_id)
    url = started["study_url"].split("crowdbench.example.org", 1)[1]
    assert Client().get(url).status_code == 200
    break_pair(Assignment.objects.get().item)
    response = Client().get(url)
    assert response.status_code == 409 and "given back" in response.content.decode()



def test_a_refused_provider_page_leads_nowhere_on_this_site(published_hit):
    """A worker sent by MTurk goes back through MTurk: the refusal offers no crowdbench links."""
    round, hit, assignment_id = published_hit
    url = mturk_url(round, hit, assignment_id, submit_to="https://evil.example.org")
    page = Client().get(url, HTTP_REFERER="http://testserver/work/").content.decode()
    assert 'role="alert"' in page and 'id="back-link"' not in page and "Back to the start page" not in page
