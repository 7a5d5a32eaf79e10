"""A round whose items are all complete is shown as complete on the board and the watch page, not
among the rounds in progress."""
import pytest
from django.urls import reverse

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from tests.annotation.factories import make_candidate, make_round, make_worker

pytestmark = pytest.mark.django_db


def finished_round(project):
    round = make_round(task_type="verification", targets=[make_candidate()], workers_per_item=1, project=project)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker,
                               data={"outcome": "correct", "harmful": False, "comment": ""})
    return round


def test_a_finished_round_is_shown_as_complete_not_in_progress(client, researcher, project):
    round = finished_round(project)
    client.force_login(researcher)
    board = client.get(reverse("cockpit:project", args=[project.slug])).context["board"]
    assert board["rounds"] == [] and [entry["round"].pk for entry in board["complete_rounds"]] == [round.pk]
    watch = client.get(reverse("cockpit:watch-json", args=[project.slug])).json()
    assert watch["open_rounds"] == [] and watch["totals"]["rounds"] == 0
    assert [(row["id"], row["status"], row["items"]) for row in watch["complete_rounds"]] == [(round.pk, "complete", 1)]
    page = client.get(reverse("cockpit:watch", args=[project.slug])).content.decode()
    assert 'id="complete-rounds"' in page and round.name in page
