"""The review queue's filters by model and by the worker's choice, model names on pairwise cards for
researchers, and the export of decisions as CSV and JSON."""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.services.review import approve_assignment, reject_assignment
from projects.services import create_project
from tests.annotation.factories import make_instance, make_outputs, make_round

from .submitted import submit, verification_submission
from .test_queue import login, queue_url

pytestmark = pytest.mark.django_db


def battle(project, models, *, chosen):
    """A pairwise submission between ``models`` whose worker chose the model ``chosen``."""
    outputs = tuple(make_outputs(instance=make_instance(), models=models))
    round = make_round(task_type="pairwise", targets=[outputs], project=project)
    winner = "a" if chosen == models[0] else "b"
    return submit(round, lambda assignment: {
        "choice": "left" if assignment.presentation["left"] == winner else "right"})


def shown(client, project, **query):
    response = client.get(queue_url(project, **query))
    assert response.status_code == 200, response.content.decode()[:500]
    return {int(pk) for pk in re.findall(r'id="submission-(\d+)"', response.content.decode())}


def test_filter_by_model_and_by_the_model_chosen(client, researcher, project):
    gpt_wins = battle(project, ("gpt", "llava"), chosen="gpt")
    llava_wins = battle(project, ("gpt", "llava"), chosen="llava")
    other = battle(project, ("blip", "llava"), chosen="blip")
    verdict = verification_submission(project)
    client = login(client, researcher)
    assert shown(client, project, model="gpt") == {gpt_wins.pk, llava_wins.pk}
    assert shown(client, project, model="blip") == {other.pk}
    assert shown(client, project, choice="gpt") == {gpt_wins.pk}
    assert shown(client, project, choice="llava") == {llava_wins.pk}
    assert shown(client, project, model="llava", choice="blip") == {other.pk}
    assert shown(client, project, choice="response_problem") == {verdict.pk}  # verification: the judgment
    page = client.get(queue_url(project)).content.decode()
    assert '<option value="gpt">chose gpt</option>' in page and '<option value="llava">llava</option>' in page


def test_filters_by_worker_flag_and_choice_together(client, researcher, project):
    first = battle(project, ("gpt", "llava"), chosen="gpt")
    second = battle(project, ("gpt", "llava"), chosen="gpt")
    Assignment.objects.filter(pk=second.pk).update(flags=[{"kind": "pasted"}])
    client = login(client, researcher)
    assert shown(client, project, choice="gpt", flagged="on") == {second.pk}
    assert shown(client, project, choice="gpt", worker=first.worker_id) == {first.pk}


def test_a_model_or_choice_not_in_the_project_is_refused_by_name(client, researcher, project, make_researcher):
    battle(project, ("gpt", "llava"), chosen="gpt")
    elsewhere = create_project(name="Study B", slug="study-b", owner=make_researcher("hopper"))
    battle(elsewhere, ("secret-model", "llava"), chosen="secret-model")
    client = login(client, researcher)
    for query, name in [({"model": "secret-model"}, "model"), ({"choice": "secret-model"}, "choice"),
                        ({"model": "x" * 5000}, "model"), ({"choice": "'; DROP TABLE"}, "choice")]:
        response = client.get(queue_url(project, **query))
        assert response.status_code == 400, query
        assert f"Unknown filter value, {name}:" in response.content.decode()
    assert "secret-model" not in client.get(queue_url(project)).content.decode()


def test_researchers_see_the_model_behind_each_side(client, researcher, project):
    made = battle(project, ("gpt", "llava"), chosen="llava")
    client = login(client, researcher)
    html = client.get(queue_url(project)).content.decode()
    names = re.findall(r'<span class="model-name">([^<]+)</span>', html)
    left = "gpt" if made.presentation["left"] == "a" else "llava"
    assert names == [left, "llava" if left == "gpt" else "gpt"]


def test_workers_never_see_the_model_names(client, project):
    from tests.annotation.factories import make_worker_user

    outputs = tuple(make_outputs(instance=make_instance(), models=("secret-gpt", "secret-llava")))
    for output in outputs:  # the factory's texts name their model; a real answer does not
        output.text = "An answer."
        output.save()
    round = make_round(task_type="pairwise", targets=[outputs], project=project)
    client.force_login(make_worker_user("wendy"))
    task_page = client.get(reverse("annotation:round", args=[round.pk]))
    assert task_page.status_code == 200 and 'name="choice"' in task_page.content.decode()
    task_json = client.post(reverse("annotation-api:next", args=[round.pk]))
    history = client.get(reverse("annotation:history"))
    for shown_to_worker in (task_page, task_json, history):
        assert b"secret-gpt" not in shown_to_worker.content and b"secret-llava" not in shown_to_worker.content


def export(client, project, fmt, **query):
    url = reverse(f"cockpit:review-export-{fmt}", args=[project.slug])
    if query:
        url += "?" + "&".join(f"{key}={value}" for key, value in query.items())
    return client.get(url)


def test_decisions_export_as_csv_and_json_with_the_queues_filters(client, researcher, project):
    approved = battle(project, ("gpt", "llava"), chosen="gpt")
    rejected = battle(project, ("gpt", "llava"), chosen="llava")
    pending = battle(project, ("gpt", "llava"), chosen="gpt")
    approve_assignment(assignment=approved, feedback="Thanks")
    reject_assignment(assignment=rejected, feedback="=HYPERLINK(\"http://evil.example\")")
    client = login(client, researcher)
    page = client.get(queue_url(project, status="all", model="gpt")).content.decode()
    assert 'id="export-csv" href="/projects/study-a/review/decisions.csv?status=all&amp;model=gpt"' in page

    response = export(client, project, "json", status="all")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert "attachment" in response["Content-Disposition"]
    rows = {row["submission"]: row for row in response.json()["submissions"]}
    assert set(rows) == {approved.pk, rejected.pk, pending.pk}
    assert rows[approved.pk]["review_status"] == "approved" and rows[approved.pk]["feedback"] == "Thanks"
    assert rows[rejected.pk]["choice"] == "llava" and rows[rejected.pk]["review_status"] == "rejected"
    assert (rows[pending.pk]["model_a"], rows[pending.pk]["model_b"], rows[pending.pk]["item"]) == ("gpt", "llava", 1)
    assert rows[pending.pk]["worker"] == pending.worker.user.username  # the label, never a provider's id

    response = export(client, project, "csv", status="rejected")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(row["submission"]) for row in table] == [rejected.pk]
    assert table[0]["feedback"] == "'=HYPERLINK(\"http://evil.example\")"  # never run as a formula
    assert export(client, project, "csv", choice="gpt", status="all").content.decode().count("\n") == 3


def test_export_is_for_the_projects_members_only(client, researcher, collaborator, project, make_researcher):
    mine = battle(project, ("gpt", "llava"), chosen="gpt")
    assert login(client, collaborator) and export(client, project, "json").status_code == 200
    stranger = make_researcher("eve")
    theirs = create_project(name="Theirs", slug="theirs", owner=stranger)
    battle(theirs, ("x-model", "y-model"), chosen="x-model")
    client.force_login(stranger)
    assert export(client, project, "csv").status_code == 404
    # Their own export names only their project's submissions; my round as a filter is refused.
    assert export(client, theirs, "json", round=mine.round_id).status_code == 400
    rows = export(client, theirs, "json").json()["submissions"]
    assert mine.pk not in {row["submission"] for row in rows} and len(rows) == 1
    client.logout()
    assert export(client, project, "csv").status_code == 302  # to log in
