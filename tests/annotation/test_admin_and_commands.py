from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.rounds import create_round
from annotation.services.submissions import submit_assignment

from .factories import make_candidate, make_round, make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", password="admin-pass-123"))
    return client


def test_admin_actions_open_and_close_rounds(admin_client):
    draft = make_round(task_type="verification", targets=[make_candidate()], open=False)
    empty = create_round(name="no items", task_type="verification")
    url = reverse("admin:annotation_collectionround_changelist")
    response = admin_client.post(url, {"action": "open_rounds", "_selected_action": [draft.pk, empty.pk]}, follow=True)
    assert response.status_code == 200
    draft.refresh_from_db()
    empty.refresh_from_db()
    assert (draft.status, empty.status) == (CollectionRound.Status.OPEN, CollectionRound.Status.DRAFT)
    assert "at least one item" in response.content.decode()
    admin_client.post(url, {"action": "close_rounds", "_selected_action": [draft.pk]})
    draft.refresh_from_db()
    assert draft.status == CollectionRound.Status.CLOSED


def test_admin_actions_approve_and_reject(admin_client):
    round = make_round(task_type="verification", targets=[make_candidate(), make_candidate()])
    submitted = []
    for _ in range(2):
        worker = make_worker()
        assignment = request_assignment(round=round, worker=worker)
        submit_assignment(assignment_id=assignment.pk, worker=worker, data={"outcome": "correct"})
        submitted.append(assignment.pk)
    url = reverse("admin:annotation_assignment_changelist")
    # Each action first asks for the feedback to the workers, then acts on confirmation.
    asked = admin_client.post(url, {"action": "reject", "_selected_action": [submitted[1]]})
    assert asked.status_code == 200 and b'name="feedback"' in asked.content
    assert Assignment.objects.get(pk=submitted[1]).review_status == Assignment.ReviewStatus.SUBMITTED
    admin_client.post(url, {"action": "approve", "_selected_action": [submitted[0]], "apply": "1", "feedback": ""})
    admin_client.post(url, {"action": "reject", "_selected_action": [submitted[1]], "apply": "1",
                            "feedback": "The caption was not read."})
    assert list(Assignment.objects.order_by("pk").values_list("review_status", flat=True)) == [
        Assignment.ReviewStatus.APPROVED, Assignment.ReviewStatus.REJECTED,
    ]
    assert admin_client.get(url + "?status__exact=submitted").status_code == 200
    assert admin_client.get(reverse("admin:annotation_collectionround_change", args=[round.pk])).status_code == 200


def test_expire_assignments_command():
    round = make_round(task_type="verification", targets=[make_candidate()], time_limit_seconds=60)
    request_assignment(round=round, worker=make_worker(), now=timezone.now() - timedelta(minutes=5))
    out = StringIO()
    call_command("expire_assignments", stdout=out)
    assert "1 assignment(s) expired" in out.getvalue()
    assert Assignment.objects.get().status == Assignment.Status.EXPIRED
