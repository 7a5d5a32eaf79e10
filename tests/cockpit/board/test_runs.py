"""Step runs started from the board: run in-process without a broker (Celery eager), through the
same services as the commands, against the local fake OpenAI server; budget stops, failures,
refusals and permissions."""
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from datasets_app.models import Instance, ReferenceCandidate
from llm.models import LLMCall, LLMRun
from llm.selectors import run_cost_from_calls
from stepruns import lifecycle
from stepruns.models import StepRun
from stepruns.services import execute_run, resume_stale_runs, start_run

from ..conftest import PASSWORD
from .conftest import MODEL, PRICES, project_instance

# Database behaviour (step runs' conditional UPDATEs and the stale-run sweep): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]
S = Instance.Status


def start(client, project, kind, *, model=MODEL, budget="1.00", **fields):
    data = {f"{kind}-run-model": model, f"{kind}-run-budget_usd": budget}
    data.update({f"{kind}-{key}": value for key, value in fields.items()})
    return client.post(reverse("cockpit:start-step", args=[project.slug, kind]), data)


@pytest.fixture
def owner_client(client, researcher):
    client.login(username=researcher.username, password=PASSWORD)
    return client


@pytest.fixture
def awaiting(project):
    return [project_instance(project, status=S.AWAITING_REFERENCE) for _ in range(3)]


def test_generate_references_runs_in_process_and_shows_progress_and_cost(
        owner_client, project, researcher, awaiting, llm_settings, fake_server, django_capture_on_commit_callbacks):
    other = project_instance(project, status=S.VERIFIED)
    with django_capture_on_commit_callbacks(execute=True):
        response = start(owner_client, project, "generate_references")
    run = StepRun.objects.get()
    assert response.status_code == 302 and response.url == f"/projects/study-a/board/runs/{run.pk}/"
    assert run.status == StepRun.Status.SUCCEEDED and run.created_by == researcher
    assert (run.done, run.total) == (3, 3) and len(fake_server.completion_requests) == 3
    llm_run = LLMRun.objects.get(pk=run.llm_run_id)
    assert run.cost_usd == llm_run.spent_usd > 0 and llm_run.budget_usd == Decimal("1")
    assert sorted(ReferenceCandidate.objects.values_list("instance_id", flat=True)) == [i.pk for i in awaiting]
    assert not ReferenceCandidate.objects.filter(instance=other).exists()
    assert set(Instance.objects.filter(pk__in=[i.pk for i in awaiting]).values_list("status", flat=True)) == {
        S.AWAITING_VERIFICATION}
    page = owner_client.get(response.url).content.decode()
    assert "succeeded" in page and "3 / 3" in page and str(run.cost_usd.normalize()) in page
    assert "3 reference candidates created" in page
    # The budget without the column's trailing zeros (it read 1.000000).
    assert "<dd>1</dd>" in page and "1.000000" not in page


def test_a_budget_too_small_stops_the_run(owner_client, project, awaiting, llm_settings, fake_server,
                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        start(owner_client, project, "generate_references", budget="0.000001")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.STOPPED and not fake_server.completion_requests
    assert not ReferenceCandidate.objects.exists()
    page = owner_client.get(reverse("cockpit:step-run", args=[project.slug, run.pk])).content.decode()
    assert "stopped: budget reached" in page and "start the step again with a larger budget" in page


def test_failures_are_listed_without_secrets(owner_client, project, awaiting, llm_settings, fake_server,
                                             django_capture_on_commit_callbacks):
    llm_settings.LLM_API_KEY = "sk-secret-key-never-shown"
    fake_server.fail_next(1, status=500, message="upstream exploded")
    with django_capture_on_commit_callbacks(execute=True):
        start(owner_client, project, "generate_references")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED and ReferenceCandidate.objects.count() == 2
    # Requests run concurrently: any one of the instances may be the one whose request failed.
    assert len(run.failures) == 1
    assert any(run.failures[0].startswith(f"instance {instance.pk}: ") for instance in awaiting)
    page = owner_client.get(reverse("cockpit:step-run", args=[project.slug, run.pk])).content.decode()
    assert "Failures (1)" in page and run.failures[0].split(": ", 1)[1][:30] in page
    assert "sk-secret" not in page and "sk-secret" not in str(run.failures) + run.summary


def test_a_step_without_a_configured_server_fails_with_the_reason(
        owner_client, project, awaiting, settings, django_capture_on_commit_callbacks):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_PRICES = "", "", MODEL, PRICES
    with django_capture_on_commit_callbacks(execute=True):
        start(owner_client, project, "generate_references")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.FAILED and "LLM_BASE_URL" in run.summary
    assert Instance.objects.filter(status=S.AWAITING_REFERENCE).count() == 3


def test_a_model_without_a_price_is_refused_before_a_run_starts(owner_client, project, awaiting, llm_settings):
    llm_settings.LLM_PRICES = {}
    response = start(owner_client, project, "generate_references")
    assert response.status_code == 400 and "has no price in LLM_PRICES" in response.content.decode()
    assert not StepRun.objects.exists() and Instance.objects.filter(status=S.AWAITING_REFERENCE).count() == 3


def test_regenerate_discarded_only_touches_the_projects_instances(
        owner_client, project, make_researcher, llm_settings, django_capture_on_commit_callbacks):
    from projects.services import create_project

    mine = project_instance(project, status=S.DISCARDED, reason="response")
    theirs = project_instance(create_project(name="B", slug="b", owner=make_researcher("bob")),
                              status=S.DISCARDED, reason="response")
    with django_capture_on_commit_callbacks(execute=True):
        start(owner_client, project, "regenerate_references", reasons="response")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED and run.parameters == {"reasons": ["response"]}
    mine.refresh_from_db(), theirs.refresh_from_db()
    assert mine.status == S.AWAITING_VERIFICATION and theirs.status == S.DISCARDED


@pytest.mark.parametrize(("fields", "message"), [
    ({"model": "gpt-unknown"}, "Select a valid choice"),
    ({"budget": "-1"}, "greater than or equal to"),
    ({"budget": "lots"}, "Enter a number"),
    ({"budget": "0.0000001"}, "decimal places"),
])
def test_bad_requests_are_refused_and_start_nothing(owner_client, project, awaiting, llm_settings, fields, message):
    response = start(owner_client, project, "generate_references", **fields)
    assert response.status_code == 400 and message in response.content.decode()
    assert not StepRun.objects.exists()


def test_an_unknown_kind_or_nothing_to_do_is_refused(owner_client, project, llm_settings):
    response = start(owner_client, project, "mine_bitcoin")
    assert response.status_code == 400 and "unknown step kind" in response.content.decode()
    response = start(owner_client, project, "generate_references")
    assert response.status_code == 400 and "nothing in this project to do" in response.content.decode()
    assert not StepRun.objects.exists()


def test_a_refused_start_is_shown_in_the_steps_form_with_its_input_and_its_address_leads_back(
        owner_client, project, llm_settings):
    """Fails where the refusal was a page of its own at the POST address, whose reload answered a
    blank 405, and the budget typed was lost."""
    response = start(owner_client, project, "generate_references", budget="2.50")
    body = response.content.decode()
    assert response.status_code == 400
    form = re.search(r'<details class="step-form" id="start-generate_references" open>.*?</details>', body, re.S)
    assert form, body[:2000]
    assert 'id="start-generate_references-refusal"' in form.group(0)
    assert "nothing in this project to do" in form.group(0)
    assert 'value="2.50"' in form.group(0)
    assert '<nav class="project-nav"' in body
    again = owner_client.get(reverse("cockpit:start-step", args=[project.slug, "generate_references"]))
    assert again.status_code == 302
    assert again["Location"] == reverse("cockpit:project", args=[project.slug]) + "#start-generate_references"


def test_only_owners_start_runs_and_only_members_see_them(client, project, collaborator, make_researcher, awaiting,
                                                          researcher, llm_settings):
    client.login(username=collaborator.username, password=PASSWORD)
    assert start(client, project, "generate_references").status_code == 403
    assert not StepRun.objects.exists()
    run = StepRun.objects.create(project=project, kind="generate_references", model=MODEL, created_by=researcher)
    assert client.get(reverse("cockpit:step-run", args=[project.slug, run.pk])).status_code == 200
    make_researcher("eve")
    client.login(username="eve", password=PASSWORD)
    assert client.get(reverse("cockpit:step-run", args=[project.slug, run.pk])).status_code == 404
    assert start(client, project, "generate_references").status_code == 404
    client.logout()
    assert start(client, project, "generate_references").status_code == 302  # to the login page
    assert StepRun.objects.count() == 1


def test_generate_outputs_for_the_projects_verified_instances(owner_client, project, llm_settings,
                                                              django_capture_on_commit_callbacks):
    from datasets_app.models import ModelOutput

    verified = [project_instance(project, status=S.VERIFIED) for _ in range(2)]
    project_instance(project, status=S.AWAITING_REFERENCE)
    with django_capture_on_commit_callbacks(execute=True):
        start(owner_client, project, "generate_outputs", model="cheap-model", output_name="cheap-v1")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED and run.parameters == {"output_name": "cheap-v1"}
    assert sorted(ModelOutput.objects.filter(model_name="cheap-v1").values_list("instance_id", flat=True)) == [
        i.pk for i in verified]
    assert run.model == "cheap-model" and run.result == {"model": "cheap-v1"}


def test_rank_reviews_with_the_chat_ranker(owner_client, project, settings, django_capture_on_commit_callbacks):
    from evaluation.models import ReviewScore
    from fakes.openai_server import FakeOpenAIServer
    from tests.annotation.factories import make_review_set

    for language in ("en", "ja"):
        make_review_set(language=language, project=project)
    make_review_set(language="en")  # another project's
    with FakeOpenAIServer(responder=lambda endpoint, body: "A > B > C > D > E") as server:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = server.base_url, "", MODEL
        settings.LLM_PRICES, settings.LLM_MAX_RETRIES = {MODEL: {"input": 1, "output": 1}}, 0
        with django_capture_on_commit_callbacks(execute=True):
            start(owner_client, project, "rank_reviews", ranker="chat", language="")
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    assert run.summary.startswith("chat: 2 of 2 review sets scored (10 review scores stored)")
    assert set(ReviewScore.objects.values_list("review__review_set__project", flat=True)) == {project.pk}
    assert run.cost_usd > 0 and (run.done, run.total) == (2, 2)


def test_generate_reviews_for_the_projects_images(owner_client, project, settings, django_capture_on_commit_callbacks):
    import json

    from datasets_app.models import ReviewSet, Source
    from fakes.openai_server import FakeOpenAIServer
    from tests.annotation.factories import make_review_set

    imported = make_review_set(language="en", stored_images=True, project=project)
    make_review_set(language="en", stored_images=True)  # another project's image
    answer = json.dumps({"reviews": [{"level": level, "text": f"Review at level {level}."} for level in range(1, 6)]})
    with FakeOpenAIServer(responder=lambda endpoint, body: answer) as server:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = server.base_url, "", MODEL
        settings.LLM_PRICES, settings.LLM_MAX_RETRIES = {MODEL: {"input": 1, "output": 1}}, 0
        with django_capture_on_commit_callbacks(execute=True):
            start(owner_client, project, "generate_reviews", languages=["en", "ja"])
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    generated = ReviewSet.objects.filter(source=Source.LLM)
    assert sorted(generated.values_list("language", flat=True)) == ["en", "ja"]
    assert set(generated.values_list("project", flat=True)) == {project.pk}
    assert set(generated.values_list("image", flat=True)) == {imported.image_id}
    assert sorted(run.result["review_set_ids"]) == sorted(generated.values_list("pk", flat=True))


def test_resume_step_runs_carries_on_runs_whose_worker_is_gone(project, researcher, awaiting, llm_settings,
                                                               fake_server):
    """The sweep queues a stale running run and a queued run no worker took; a live one is left alone.
    (Killing a real Celery worker mid-run: tests/faults/test_celery_worker_killed.py.)"""
    llm_settings.STEP_RUN_STALE_SECONDS = 60
    long_ago = timezone.now() - timedelta(seconds=120)
    lost = lifecycle.begin(StepRun.objects.create(project=project, kind="generate_references", model=MODEL,
                                                  created_by=researcher, budget_usd=Decimal("1")))
    # The lost worker paid 0.4 for an answer it could not use (a failed call stays out of the cache).
    LLMCall.objects.create(run=lost.llm_run, request_hash="lost", endpoint="chat", model=MODEL, request={},
                           status=LLMCall.Status.FAILED, cost_usd=Decimal("0.4"))
    LLMRun.objects.filter(pk=lost.llm_run_id).update(spent_usd=Decimal("0.4"))
    lifecycle.record_progress(lost, added=3, answered=2)
    StepRun.objects.filter(pk=lost.pk).update(heartbeat_at=long_ago)
    live = StepRun.objects.create(project=project, kind="generate_references", model=MODEL, created_by=researcher,
                                  budget_usd=Decimal("1"), status=StepRun.Status.RUNNING, attempts=1,
                                  started_at=long_ago, heartbeat_at=timezone.now())
    out = StringIO()
    call_command("resume_step_runs", stdout=out)  # no broker: the run is carried on in-process
    assert out.getvalue().strip() == f"queued again: {lost.pk}"
    lost.refresh_from_db()
    assert (lost.status, lost.attempts, lost.done, lost.total) == (StepRun.Status.SUCCEEDED, 2, 3, 3)
    llm_run = LLMRun.objects.get(pk=lost.llm_run_id)
    # Both attempts charged the one LLM run, capped at the whole budget: the 0.4 spent before is in it.
    assert llm_run.budget_usd == Decimal("1") and llm_run.calls.count() == 4
    assert lost.cost_usd == llm_run.spent_usd == run_cost_from_calls(llm_run) > Decimal("0.4")
    assert StepRun.objects.get(pk=live.pk).attempts == 1

    queued = StepRun.objects.create(project=project, kind="generate_references", model=MODEL, created_by=researcher,
                                    budget_usd=Decimal("1"))
    StepRun.objects.filter(pk=queued.pk).update(created_at=long_ago)
    assert resume_stale_runs() == [queued.pk]
    queued.refresh_from_db()
    assert queued.status == StepRun.Status.SUCCEEDED and queued.attempts == 1
    assert execute_run(queued.pk).status == StepRun.Status.SUCCEEDED  # a late copy of its task changes nothing


def test_a_run_started_while_the_broker_is_down_stays_queued_for_the_sweep(
        project, researcher, awaiting, llm_settings, caplog, django_capture_on_commit_callbacks):
    from crowdbench.celery import app
    from harness.processes import free_port
    from tests.pipeline.test_celery_worker import _forget_connections

    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    saved = {key: app.conf[key] for key in ("broker_url", "task_always_eager", "broker_connection_retry",
                                             "task_publish_retry")}
    llm_settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url=dead, task_always_eager=False, task_publish_retry=False)
    _forget_connections()
    try:
        with caplog.at_level("WARNING", logger="stepruns.services"), \
                django_capture_on_commit_callbacks(execute=True):
            run = start_run(project=project, user=researcher, kind="generate_references", model=MODEL,
                            budget_usd="1")
    finally:
        app.conf.update(saved)
        _forget_connections()
    run.refresh_from_db()
    assert run.status == StepRun.Status.QUEUED
    assert f"step run {run.pk}: the task broker does not answer" in caplog.text


def test_a_task_for_a_run_a_live_worker_holds_leaves_it_alone(project, researcher, llm_settings, monkeypatch):
    from stepruns.tasks import execute_run_task

    held = StepRun.objects.create(project=project, kind="generate_references", model=MODEL, created_by=researcher,
                                  budget_usd=Decimal("1"), status=StepRun.Status.RUNNING, attempts=1,
                                  started_at=timezone.now(), heartbeat_at=timezone.now())
    # In-process there is no later: the copy returns at once.
    assert execute_run_task.delay(run_id=held.pk).get() == {"run_id": held.pk, "status": "held elsewhere"}
    # In a worker (called outside an eager apply) it asks again once the holder would count as gone.
    asked = {}
    monkeypatch.setattr(execute_run_task, "retry", lambda **kwargs: asked.update(kwargs) or RuntimeError("retry"))
    with pytest.raises(RuntimeError, match="retry"):
        execute_run_task.run(run_id=held.pk)
    assert asked == {"countdown": llm_settings.STEP_RUN_STALE_SECONDS}
    held.refresh_from_db()
    assert (held.status, held.attempts) == (StepRun.Status.RUNNING, 1)
