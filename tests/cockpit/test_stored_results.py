"""Stored results: the pages, downloads and API serve what the background computation stored, which
equals today's computation; newer judgments show as waiting; "recompute now"; one computation for
many judgments."""
import json

import pytest
from django.urls import reverse

from annotation.services.engine import request_assignment
from annotation.services.review import reject_assignment
from annotation.services.submissions import submit_assignment
from evaluation import stored_results
from evaluation.models import ResultsRefresh, StoredResult
from evaluation.results import irr_result, leaderboard_result
from evaluation.selectors import battles, irr_inputs
from evaluation.stored_results import refresh_results, views
from projects.models import Project
from projects.services import create_project
from projects.tokens import create_token

from .results_data import judged_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(project, researcher):
    judged_project(create_project(name="Other", slug="other", owner=researcher))
    return judged_project(project)


@pytest.fixture
def queued(monkeypatch, settings):
    """A broker as in production: the task is not run in-process, the queueing is recorded instead."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    calls = []

    def apply_async(*, kwargs, countdown):
        calls.append({**kwargs, "countdown": countdown})

    from evaluation.tasks import refresh_results_task

    monkeypatch.setattr(refresh_results_task, "apply_async", apply_async)
    return calls


def as_json(value):
    return json.loads(json.dumps(value))


def submit_late_judgment(data, django_capture_on_commit_callbacks):
    late = data.in_flight_worker
    with django_capture_on_commit_callbacks(execute=True):
        assignment = request_assignment(round=data.pairwise, worker=late)
        submit_assignment(assignment_id=assignment.pk, worker=late, data={"choice": "left"})
    return assignment


def test_stored_results_equal_a_fresh_computation(project, data):
    stored = {(row.kind, row.key): row for row in refresh_results(project=project)}
    assert len(views()) == 5
    # The three rounds' agreement so far, in each cockpit language, beside the five views.
    assert len(stored) == 5 + 3 * 2
    for kind, key, parameters in views():
        row = stored[(kind, key)]
        if kind == "leaderboard":
            frame = battles(source=parameters["source"], project=project)
            fresh = leaderboard_result(frame, project=project, **parameters)
        else:
            frame, scores = irr_inputs(project=project)
            fresh = irr_result(frame, scores, project=project, **parameters)
        assert json.loads(row.data) == as_json(fresh.data), key
        assert sorted(row.plots) == sorted(fresh.plots)
        # A ranking is one judgment, however many reviews it ranks (its table has a row per review).
        assert row.judgment_count == (len(frame) // 5 if kind == "irr" else len(frame))
        assert row.project == project
    human_elo = stored[("leaderboard", "human/elo/200/0")]
    assert human_elo.judgment_count == 35 and json.loads(human_elo.data)["battle_count"] == 35
    rankings, _scores = irr_inputs(project=project)
    assert 0 < stored[("irr", "0.6")].judgment_count == len(rankings) // 5


def test_the_page_serves_the_stored_result_and_says_when_it_was_computed(client, researcher, project, data):
    client.force_login(researcher)
    html = client.get(reverse("cockpit:results", args=["study-a"])).content.decode()
    # No broker: the first view computed the page's result once, in the request, and stored it.
    row = StoredResult.objects.get(project=project, kind="leaderboard", key="human/elo/200/0")
    assert "Computed at" in html and "from 35 judgments" in html and 'id="recompute-results"' in html
    assert row.computed_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert "Newer judgments are waiting" not in html
    assert not StoredResult.objects.filter(project__slug="other").exists()  # one project's results only


def test_download_and_api_read_the_stored_result(client, researcher, project, data):
    refresh_results(project=project)
    # The stored rows are what is served: change one and the download and the API show the change.
    row = StoredResult.objects.get(project=project, kind="leaderboard", key="human/bt/200/0")
    changed = {**json.loads(row.data), "battle_count": 12345}
    StoredResult.objects.filter(pk=row.pk).update(data=json.dumps(changed))
    irr_row = StoredResult.objects.get(project=project, kind="irr")
    StoredResult.objects.filter(pk=irr_row.pk).update(data=json.dumps({**json.loads(irr_row.data), "threshold": 0.123}))
    client.force_login(researcher)
    download = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]), {"method": "bt"}).json()
    assert download == changed
    assert client.get(reverse("cockpit:irr-json", args=["study-a"])).json()["threshold"] == 0.123
    assert "12345 battles" in client.get(reverse("cockpit:results", args=["study-a"]), {"method": "bt"}).content.decode()

    token = create_token(user=researcher)[1]
    api = client.get("/api/evaluations/stored-leaderboard/", {"project": "study-a", "method": "bt"},
                     HTTP_AUTHORIZATION=f"Token {token}")
    assert api.status_code == 200, api.content
    assert api.json()["result"] == changed
    assert api.json()["status"]["stored"] is True and api.json()["status"]["judgment_count"] == 35
    assert api.json()["status"]["newer_judgments_waiting"] is False
    irr_api = client.get("/api/evaluations/stored-irr/", {"project": "study-a"}, HTTP_AUTHORIZATION=f"Token {token}")
    assert irr_api.status_code == 200 and irr_api.json()["result"]["threshold"] == 0.123


def test_other_parameters_are_computed_on_request_not_stored(client, researcher, project, data):
    client.force_login(researcher)
    html = client.get(reverse("cockpit:results", args=["study-a"]), {"bootstrap": "50"}).content.decode()
    assert 'id="results-on-request"' in html and 'id="recompute-results"' not in html
    assert not StoredResult.objects.exists()


def test_newer_judgments_show_as_waiting_until_recomputed(client, researcher, project, data,
                                                         django_capture_on_commit_callbacks):
    refresh_results(project=project)
    client.force_login(researcher)
    url = reverse("cockpit:leaderboard-json", args=["study-a"])
    before = client.get(url).json()
    submit_late_judgment(data, django_capture_on_commit_callbacks)
    assert ResultsRefresh.objects.get(project=project).changed_at is not None
    # Served from storage: the late judgment is not in it, and the page says one is waiting.
    assert client.get(url).json() == before
    page = client.get(reverse("cockpit:results", args=["study-a"])).content.decode()
    assert "Newer judgments are waiting" in page
    assert "Newer judgments are waiting" in client.get(reverse("cockpit:irr", args=["study-a"])).content.decode()

    response = client.post(reverse("cockpit:results-recompute", args=["study-a"]), {"page": "irr"})
    assert response.status_code == 302 and response.url == reverse("cockpit:irr", args=["study-a"])
    after = client.get(url).json()
    assert after["battle_count"] == before["battle_count"] + 1
    assert "Newer judgments are waiting" not in client.get(reverse("cockpit:results", args=["study-a"])).content.decode()


def test_a_rejected_judgment_leaves_the_results_waiting(client, researcher, project, data,
                                                       django_capture_on_commit_callbacks):
    refresh_results(project=project)
    submitted = data.pairwise.items.first().assignments.filter(status="submitted").first()
    with django_capture_on_commit_callbacks(execute=True):
        reject_assignment(assignment=submitted)
    client.force_login(researcher)
    assert "Newer judgments are waiting" in client.get(reverse("cockpit:results", args=["study-a"])).content.decode()
    refresh_results(project=project)
    row = StoredResult.objects.get(project=project, kind="leaderboard", key="human/elo/200/0")
    assert row.judgment_count == 34


def test_recompute_is_refused_to_non_members_and_to_get(client, make_researcher, project, data):
    refresh_results(project=project)
    computed = StoredResult.objects.get(project=project, kind="irr").computed_at
    outsider = make_researcher("mallory")
    client.force_login(outsider)
    url = reverse("cockpit:results-recompute", args=["study-a"])
    assert client.post(url).status_code == 404
    client.force_login(project.memberships.first().user)
    assert client.get(url).status_code == 405
    assert StoredResult.objects.get(project=project, kind="irr").computed_at == computed


def test_an_unchanged_table_is_not_recomputed_unless_asked(project, data):
    first = {row.key: row.computed_at for row in refresh_results(project=project)}
    again = {row.key: row.computed_at for row in refresh_results(project=project)}
    assert again == first
    forced = {row.key: row.computed_at for row in refresh_results(project=project, force=True)}
    assert all(forced[key] > first[key] for key in first)


def test_many_judgments_make_one_queued_computation(project, data, queued, settings,
                                                    django_capture_on_commit_callbacks):
    for _ in range(25):
        stored_results.judgments_changed(project_id=project.pk)
    assert queued == [{"project_id": project.pk, "force": False, "countdown": settings.RESULTS_REFRESH_DELAY_SECONDS}]
    # Submitting judgments queues nothing more while that one waits.
    submit_late_judgment(data, django_capture_on_commit_callbacks)
    assert len(queued) == 1
    # The computation clears the flag: the next judgment queues the next computation.
    from evaluation.tasks import refresh_results_task

    assert refresh_results_task.run(project_id=project.pk)["views"] == 11
    assert ResultsRefresh.objects.get(project=project).queued_at is None
    stored_results.judgments_changed(project_id=project.pk)
    assert len(queued) == 2
    # Another project's judgments queue that project's computation.
    other = Project.objects.get(slug="other")
    stored_results.judgments_changed(project_id=other.pk)
    assert queued[-1]["project_id"] == other.pk and len(queued) == 3


def test_without_a_stored_result_a_worker_computes_it_and_the_page_says_so(client, researcher, project, data, queued):
    client.force_login(researcher)
    response = client.get(reverse("cockpit:results", args=["study-a"]))
    html = response.content.decode()
    assert response.status_code == 200 and "being computed" in html and 'id="recompute-results"' in html
    assert queued == [{"project_id": project.pk, "force": False, "countdown": 0}]
    # Reloading does not queue it again; the download says to come back.
    client.get(reverse("cockpit:irr", args=["study-a"]))
    assert len(queued) == 1
    download = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]))
    assert download.status_code == 503 and "being computed" in download.content.decode()
    assert not StoredResult.objects.exists()
    # "Recompute now" with a worker queues it at once.
    assert client.post(reverse("cockpit:results-recompute", args=["study-a"])).status_code == 302
    assert queued[-1] == {"project_id": project.pk, "force": True, "countdown": 0}


def test_the_watch_shows_the_stored_agreement_in_the_readers_language(client, researcher, project, data,
                                                                      django_capture_on_commit_callbacks):
    from django.utils import translation

    refresh_results(project=project)
    for round in (data.pairwise, data.ranking):
        with translation.override("ja"):
            fresh = round.task_type_handler.agreement_so_far(round)
        row = StoredResult.objects.get(project=project, kind="agreement", key=f"round/{round.pk}/ja")
        assert json.loads(row.data) == as_json(fresh)
    client.force_login(researcher)
    url = reverse("cockpit:round-watch-json", args=["study-a", data.pairwise.pk])
    body = client.get(url).json()
    stored = json.loads(StoredResult.objects.get(project=project, kind="agreement",
                                                 key=f"round/{data.pairwise.pk}/en").data)
    assert {k: v for k, v in body["agreement"].items() if k in stored} == stored
    assert body["agreement"]["newer_judgments_waiting"] is False
    japanese = client.get(url, HTTP_ACCEPT_LANGUAGE="ja").json()["agreement"]
    assert japanese["label"] != body["agreement"]["label"]
    # A late judgment: the watch says newer judgments wait until the recomputation.
    submit_late_judgment(data, django_capture_on_commit_callbacks)
    page = client.get(reverse("cockpit:round-watch", args=["study-a", data.pairwise.pk])).content.decode()
    assert "Newer judgments are waiting" in page and "Computed at" in page
    refresh_results(project=project)
    assert client.get(url).json()["agreement"]["newer_judgments_waiting"] is False


def test_the_irr_page_lists_the_first_kept_items_and_the_json_all(client, researcher, project, data, monkeypatch):
    from cockpit.views import results as views

    client.force_login(researcher)
    report = client.get(reverse("cockpit:irr-json", args=["study-a"])).json()
    kept = [item for item in report["items"] if item["kept"]]
    assert len(kept) >= 2
    monkeypatch.setattr(views, "KEPT_ITEMS_SHOWN", 1)
    html = client.get(reverse("cockpit:irr", args=["study-a"])).content.decode()
    assert html.count("<tr><td>") - html.count('<tr><td>Human') >= 1
    assert f"The first 1 of {len(kept)} kept items" in html


@pytest.mark.database_sensitive
def test_while_a_computation_is_queued_judgments_write_nothing(project, data, queued, settings, redis_server):
    """With the shared cache the queued mark spares every submission its UPDATE of the flag row; the
    computation removes the mark before it reads, so the next change is written and queued again."""
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluation.tasks import refresh_results_task

    settings.CACHE_URL = redis_server.url(4)
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": "crowdbench.cache.ResilientRedisCache",
                                                     "LOCATION": redis_server.url(4)}}
    cache.clear()
    try:
        stored_results.judgments_changed(project_id=project.pk)
        assert len(queued) == 1
        with CaptureQueriesContext(connection) as statements:
            for _ in range(10):
                stored_results.judgments_changed(project_id=project.pk)
        assert statements.captured_queries == [] and len(queued) == 1
        refresh_results_task.run(project_id=project.pk)
        changed_before = ResultsRefresh.objects.get(project=project).changed_at
        stored_results.judgments_changed(project_id=project.pk)
        assert len(queued) == 2 and ResultsRefresh.objects.get(project=project).changed_at > changed_before
    finally:
        cache.clear()
