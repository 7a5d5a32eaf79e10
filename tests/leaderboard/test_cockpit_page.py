"""The cockpit's leaderboard page: owners open outside submissions, hand out tokens (shown once)
and submit themselves; collaborators read; worker text and labels are escaped."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from leaderboard import services
from leaderboard.models import Submission, SubmissionPolicy, SubmissionToken
from stepruns.models import StepRun
from tests.cockpit.board.conftest import MODEL, judged_instance
from tests.cockpit.board.test_uploads import predictions_csv
from tests.cockpit.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(client, researcher):
    client.login(username=researcher.username, password=PASSWORD)
    return client


def url(project):
    return reverse("cockpit:leaderboard", args=[project.slug])


def test_the_owner_opens_submissions_and_makes_a_token_shown_once(owner_client, project, llm_settings):
    response = owner_client.post(url(project), {"accepts_outside_submissions": "on", "judge_model": MODEL,
                                                "budget_usd": "2.50"})
    assert response.status_code == 302
    policy = SubmissionPolicy.objects.get(project=project)
    assert policy.accepts_outside_submissions and policy.judge_model == MODEL and str(policy.budget_usd) == "2.500000"

    page = owner_client.post(url(project), {"label": "<b>Vision</b> Lab"}).content.decode()
    record = SubmissionToken.objects.get()
    raw = page.split('id="new-token">')[1].split("<")[0]
    assert raw.startswith(services.TOKEN_PREFIX) and services.token_from_secret(raw) == record
    assert "&lt;b&gt;Vision&lt;/b&gt; Lab" in page and "<b>Vision</b>" not in page
    later = owner_client.get(url(project)).content.decode()
    assert raw not in later and record.prefix in later and "active" in later

    owner_client.post(url(project), {"revoke": str(record.pk)})
    record.refresh_from_db()
    assert record.revoked_at is not None and services.token_from_secret(raw) is None


def test_bad_settings_are_said_on_the_form_and_change_nothing(owner_client, project, llm_settings):
    response = owner_client.post(url(project), {"accepts_outside_submissions": "on", "budget_usd": "-1"})
    assert response.status_code == 400 and "greater than or equal to" in response.content.decode()
    response = owner_client.post(url(project), {"label": "   "})
    assert response.status_code == 400 and "This field is required" in response.content.decode()
    assert not SubmissionPolicy.objects.filter(accepts_outside_submissions=True).exists()
    assert not SubmissionToken.objects.exists()


def test_the_owner_submits_a_file_and_a_refused_one_is_named_on_the_form(
        owner_client, project, llm_settings, fake_server, django_capture_on_commit_callbacks):
    board = [judged_instance(project) for _ in range(2)]
    bad = owner_client.post(url(project), {"submit": "1", "submission-file": SimpleUploadedFile(
        "dup.csv", predictions_csv(board, model="model-x").encode())})
    assert bad.status_code == 400 and "dup.csv: the model name(s) model-x are already on the board" in bad.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(url(project), {"submit": "1", "submission-file": SimpleUploadedFile(
            "mine.csv", predictions_csv(board, model="<i>own</i>").encode())})
    assert response.status_code == 302
    submission = Submission.objects.get()
    assert submission.step_run.status == StepRun.Status.SUCCEEDED
    page = owner_client.get(url(project)).content.decode()
    assert "&lt;i&gt;own&lt;/i&gt;" in page and "<i>own</i>" not in page and "2 / 2" in page
    assert reverse("cockpit:step-run", args=[project.slug, submission.step_run.pk]) in page


def test_collaborators_read_and_may_not_change(client, project, collaborator, llm_settings):
    client.login(username=collaborator.username, password=PASSWORD)
    page = client.get(url(project))
    assert page.status_code == 200 and "takes no submissions from outside" in page.content.decode()
    assert "Create a submission token" not in page.content.decode()
    assert client.post(url(project), {"label": "Lab"}).status_code == 403
    assert client.post(url(project), {"accepts_outside_submissions": "on", "budget_usd": "1"}).status_code == 403
    assert not SubmissionToken.objects.exists() and not SubmissionPolicy.objects.filter(
        accepts_outside_submissions=True).exists()


def test_a_token_of_another_project_cannot_be_revoked(owner_client, project, make_researcher, llm_settings):
    from projects.services import create_project

    other = create_project(name="B", slug="b", owner=make_researcher("bob"))
    record, _raw = services.create_token(project=other, user=other.memberships.get().user, label="Lab")
    assert owner_client.post(url(project), {"revoke": str(record.pk)}).status_code == 404
    record.refresh_from_db()
    assert record.revoked_at is None


def test_the_page_shows_when_a_token_was_last_used(owner_client, project, researcher, llm_settings):
    from rest_framework.test import APIClient

    services.set_policy(project=project, user=researcher, accepts_outside_submissions=True, judge_model="",
                        budget_usd="1")
    record, raw = services.create_token(project=project, user=researcher, label="Lab")
    assert "<td>—</td>" in owner_client.get(url(project)).content.decode()  # never used
    submitter = APIClient()
    submitter.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert submitter.get(f"/api/leaderboard/{project.slug}/").status_code == 200
    record.refresh_from_db()
    page = owner_client.get(url(project)).content.decode()
    assert f"<td>{record.last_used_at:%Y-%m-%d %H:%M}</td>" in page and "<td>—</td>" not in page
