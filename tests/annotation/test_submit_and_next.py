"""Submit-and-next (one request per task) and the hold of a task a page shows: reserved for the round's
time limit only once the worker starts it (issue: opening a round's page held a task for 30 minutes)."""
from datetime import timedelta
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker
from providers.services import block_worker

from .factories import make_instance, make_outputs, make_round, make_worker_user

pytestmark = pytest.mark.django_db


def pairwise_round(items: int = 3, workers_per_item: int = 1, **options):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(items)]
    return make_round(task_type="pairwise", targets=pairs, workers_per_item=workers_per_item, **options)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def submit_and_next(client, assignment_id, data, query=""):
    return client.post(reverse("annotation-api:submit-and-next", args=[assignment_id]) + query, data, format="json")


def test_submit_and_next_stores_the_answer_and_answers_the_next_task():
    round = pairwise_round(items=3)
    client = client_for(make_worker_user())
    first = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]

    response = submit_and_next(client, first["id"], {"choice": "left"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["assignment"] == first["id"] and body["stored"] is True and body["status"] == "submitted"
    following = body["next"]["assignment"]
    assert following["id"] != first["id"] and following["round"] == round.pk
    assert body["next"]["progress"] == {"done": 1, "total": 3}
    # An API client that asks takes the task for the round's time limit.
    assert following["in_preview"] is False
    assert following["seconds_left"] > round.time_limit_seconds - 60
    assert Assignment.objects.get(pk=first["id"]).status == Assignment.Status.SUBMITTED
    assert Assignment.objects.get(pk=following["id"]).status == Assignment.Status.ASSIGNED

    # A repeat of the same submission (a lost answer, say) is stored once and answers the same next task.
    again = submit_and_next(client, first["id"], {"choice": "left"})
    assert again.status_code == 200 and again.json()["stored"] is False
    assert again.json()["next"]["assignment"]["id"] == following["id"]
    assert Assignment.objects.filter(round=round).count() == 2

    third = submit_and_next(client, following["id"], {"choice": "right"}).json()["next"]["assignment"]
    last = submit_and_next(client, third["id"], {"choice": "left"})
    assert last.status_code == 201
    assert last.json()["next"]["assignment"] is None
    assert last.json()["next"]["detail"] == "There are no more tasks for you in this round."
    assert last.json()["next"]["progress"] == {"done": 3, "total": 3}


def test_a_refused_submission_takes_no_next_task():
    round = pairwise_round(items=2)
    client = client_for(make_worker_user())
    first = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = submit_and_next(client, first["id"], {"choice": "middle"})
    assert response.status_code == 400
    assert list(Assignment.objects.filter(round=round).values_list("status", flat=True)) == ["assigned"]
    assert submit_and_next(client, 999999, {"choice": "left"}).status_code == 404


def test_the_submission_stays_stored_when_the_next_task_is_refused():
    round = pairwise_round(items=2)
    user = make_worker_user()
    client = client_for(user)
    first = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    block_worker(worker=get_or_create_local_worker(user=user), reason="Copied answers.")
    response = submit_and_next(client, first["id"], {"choice": "left"})
    assert response.status_code == 201 and response.json()["stored"] is True
    assert response.json()["next"]["assignment"] is None
    assert response.json()["next"]["detail"] == "Your account may not take tasks."
    assert Assignment.objects.filter(round=round).count() == 1


def test_another_workers_assignment_is_unknown():
    round = pairwise_round(items=2)
    owner = client_for(make_worker_user())
    first = owner.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    other = client_for(make_worker_user())
    assert submit_and_next(other, first["id"], {"choice": "left"}).status_code == 404
    assert other.post(reverse("annotation-api:start", args=[first["id"]])).status_code == 404
    assert Assignment.objects.get(pk=first["id"]).status == Assignment.Status.ASSIGNED


# --- a task is reserved when the worker starts it -------------------------------------------------


def test_opening_the_round_page_holds_the_task_for_a_look_only(settings):
    settings.TASK_PREVIEW_SECONDS = 90
    round = pairwise_round(items=1, time_limit_seconds=1800)
    client = client_for(make_worker_user())
    page = client.get(reverse("annotation:round", args=[round.pk]))
    assert page.status_code == 200
    assignment = page.context["assignment"]
    assert assignment.in_preview
    assert timedelta(seconds=80) < assignment.expires_at - timezone.now() <= timedelta(seconds=90)
    html = page.content.decode()
    assert 'data-in-preview="1"' in html
    assert reverse("annotation-api:start", args=[assignment.pk]) in html
    assert reverse("annotation-api:submit-and-next", args=[assignment.pk]) in html
    # The clock shows the whole time limit: it runs from the start.
    assert page.context["seconds_left"] == 1800

    started = client.post(reverse("annotation-api:start", args=[assignment.pk]))
    assert started.status_code == 200 and started.json()["in_preview"] is False
    assignment.refresh_from_db()
    assert not assignment.in_preview
    assert assignment.expires_at - timezone.now() > timedelta(seconds=1790)
    # Starting again changes nothing (no time gained by starting twice).
    expires = assignment.expires_at
    client.post(reverse("annotation-api:start", args=[assignment.pk]))
    assignment.refresh_from_db()
    assert assignment.expires_at == expires
    # Reloading the page shows the started task with its time left.
    again = client.get(reverse("annotation:round", args=[round.pk]))
    assert again.context["assignment"].pk == assignment.pk and 'data-in-preview' not in again.content.decode()


def test_a_worker_who_only_looks_leaves_the_item_to_another_worker(settings):
    """Fails where opening the page reserved the task for the round's time limit (30 minutes)."""
    settings.TASK_PREVIEW_SECONDS = 60
    round = pairwise_round(items=1, workers_per_item=1, time_limit_seconds=1800)
    looker, worker = client_for(make_worker_user()), client_for(make_worker_user())
    seen = looker.get(reverse("annotation:round", args=[round.pk])).context["assignment"]

    # While the looker is looking, the item is theirs.
    assert "assignment" not in worker.get(reverse("annotation:round", args=[round.pk])).context

    later = timezone.now() + timedelta(seconds=61)
    with mock.patch("django.utils.timezone.now", return_value=later):
        page = worker.get(reverse("annotation:round", args=[round.pk]))
        assert page.status_code == 200
        assert page.context["assignment"].item_id == seen.item_id
        # The looker's preview ran out and left no row: starting it now is refused, nothing is lost.
        refused = looker.post(reverse("annotation-api:start", args=[seen.pk]))
        assert refused.status_code == 404
    assert not Assignment.objects.filter(pk=seen.pk).exists()


def test_a_worker_who_looked_and_left_can_come_back_to_the_item(settings):
    """Fails where a look that ran out was kept as an expired assignment: one assignment per item and
    worker then kept the worker from the item for good ("no more tasks for you")."""
    settings.TASK_PREVIEW_SECONDS = 60
    round = pairwise_round(items=1, workers_per_item=1, time_limit_seconds=1800)
    looker, other = client_for(make_worker_user()), client_for(make_worker_user())
    seen = looker.get(reverse("annotation:round", args=[round.pk])).context["assignment"]

    later = timezone.now() + timedelta(seconds=61)
    with mock.patch("django.utils.timezone.now", return_value=later):
        # Another worker looks in turn, and leaves too.
        theirs = other.get(reverse("annotation:round", args=[round.pk])).context["assignment"]
        assert theirs.item_id == seen.item_id
    with mock.patch("django.utils.timezone.now", return_value=later + timedelta(seconds=61)):
        assert [offer.round.pk for offer in looker.get(reverse("annotation:work-list")).context["offers"]] == [round.pk]
        back = looker.get(reverse("annotation:round", args=[round.pk]))
        assert back.context["assignment"].item_id == seen.item_id, back.content.decode()[:500]
        started = looker.post(reverse("annotation-api:start", args=[back.context["assignment"].pk]))
        assert started.status_code == 200
    assert Assignment.objects.filter(round=round).count() == 1


def test_a_page_submission_answers_the_next_task_held_for_a_look(settings):
    settings.TASK_PREVIEW_SECONDS = 120
    round = pairwise_round(items=2)
    client = client_for(make_worker_user())
    shown = client.get(reverse("annotation:round", args=[round.pk])).context["assignment"]
    response = submit_and_next(client, shown.pk, {"choice": "left"}, query="?preview=1")
    assert response.status_code == 201
    following = response.json()["next"]["assignment"]
    assert following["in_preview"] is True and following["seconds_left"] <= 120
    assert response.json()["next_url"] == reverse("annotation:round", args=[round.pk])
    # The page the worker is sent to shows that task, without claiming another.
    page = client.get(response.json()["next_url"])
    assert page.context["assignment"].pk == following["id"]
    assert Assignment.objects.filter(round=round).count() == 2


def test_a_provider_arrival_or_api_request_is_not_a_preview():
    round = pairwise_round(items=1)
    user = make_worker_user()
    assignment = request_assignment(round=round, worker=get_or_create_local_worker(user=user))
    assert not assignment.in_preview
