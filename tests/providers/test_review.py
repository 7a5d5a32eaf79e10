"""The one review path: admin actions approve and reject at the provider first, then here."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from providers import services
from providers.models import Publication
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider
from providers.review import InvalidDecision, review_submissions


from .test_mturk import work
from .test_prolific import LONG_REASON, participate

pytestmark = pytest.mark.django_db
URL = "/admin/annotation/assignment/"
TRANSITION = "POST /api/v1/submissions/{id}/transition/"


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("reviewer", password="review-pass-123"))
    return client


def act(client, action: str, assignments, feedback: str | None = None):
    """Choose the action on the change list, then confirm it on the feedback page."""
    ids = [a.pk for a in assignments]
    asked = client.post(URL, {"action": action, "_selected_action": ids})
    assert asked.status_code == 200 and b'name="feedback"' in asked.content
    confirm = {"action": action, "_selected_action": ids, "apply": "1"}
    if feedback is not None:
        confirm["feedback"] = feedback
    return client.post(URL, confirm, follow=True)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_prolific_submission_approved_in_the_admin_is_approved_and_paid_at_prolific(
        admin_client, prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    participate(prolific_fake, round, 1)
    assignment = Assignment.objects.get(round=round)
    response = act(admin_client, "approve", [assignment], feedback="Thank you.")
    assert "Approved 1." in messages_of(response)
    (call,) = prolific_fake.calls(TRANSITION)
    assert call.params["body"] == {"action": "APPROVE"} and call.params["path_id"] == assignment.provider_assignment_id
    remote = ProlificProvider(retry_pause=0)._request("GET", f"submissions/{assignment.provider_assignment_id}/")
    assert remote["status"] == "APPROVED"
    assert prolific_fake.total_paid("reward") == 150
    assignment.refresh_from_db()
    assert (assignment.review_status, assignment.review_feedback) == ("approved", "Thank you.")
    # Approving again changes and pays nothing.
    again = act(admin_client, "approve", [assignment], feedback="")
    assert "1 already had this decision." in messages_of(again)
    assert len(prolific_fake.calls(TRANSITION)) == 1 and prolific_fake.total_paid("reward") == 150


def test_mturk_submission_rejected_in_the_admin_is_rejected_at_mturk_with_its_feedback(
        admin_client, mturk_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    assert work(mturk_fake, round, workers=1) == 1
    assignment = Assignment.objects.get(round=round)
    feedback = "Both answers were chosen without <opening> the images."
    response = act(admin_client, "reject", [assignment], feedback=feedback)
    assert "Rejected 1." in messages_of(response)
    (call,) = mturk_fake.calls("RejectAssignment")
    assert call.params == {"AssignmentId": assignment.provider_assignment_id, "RequesterFeedback": feedback}
    remote = MTurkProvider(retry_pause=0).client.get_assignment(AssignmentId=assignment.provider_assignment_id)
    assert remote["Assignment"]["AssignmentStatus"] == "Rejected"
    assert remote["Assignment"]["RequesterFeedback"] == feedback
    assert mturk_fake.total_paid() == "0.00"
    assignment.refresh_from_db()
    assert (assignment.review_status, assignment.review_feedback) == ("rejected", feedback)


def test_a_rejection_needs_feedback_and_a_refusal_at_the_provider_changes_nothing(
        admin_client, prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="1.50")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    participate(prolific_fake, round, 2)
    first, second = Assignment.objects.filter(round=round).order_by("pk")
    # No feedback: the form asks again; nothing is sent anywhere.
    empty = admin_client.post(URL, {"action": "reject", "_selected_action": [first.pk], "apply": "1", "feedback": ""})
    assert empty.status_code == 200 and b"This field is required" in empty.content
    assert not prolific_fake.calls(TRANSITION)
    # Prolific wants 100+ characters: refused there, so not recorded here either.
    short = act(admin_client, "reject", [first, second], feedback="Too fast.")
    errors = [m for m in messages_of(short) if "at least 100 characters" in m]
    assert len(errors) == 2
    assert set(Assignment.objects.filter(round=round).values_list("review_status", flat=True)) == {"submitted"}
    act(admin_client, "reject", [first], feedback=LONG_REASON)
    first.refresh_from_db()
    assert first.review_status == "rejected"
    statuses = {s["id"]: s["status"] for s in ProlificProvider(retry_pause=0)._request(
        "GET", f"studies/{Publication.objects.get(round=round).external_id}/submissions/")["results"]}
    assert statuses == {first.provider_assignment_id: "REJECTED", second.provider_assignment_id: "AWAITING REVIEW"}


def test_local_workers_are_reviewed_here_only_and_unsubmitted_work_is_refused(admin_client, round_factory):
    round = round_factory(items=2, workers_per_item=1)
    worker = get_or_create_local_worker(user=get_user_model().objects.create_user("local-worker"))
    done = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=done.pk, worker=worker, data={"choice": "left"})
    open_one = request_assignment(round=round, worker=worker)
    response = act(admin_client, "approve", [done, open_one], feedback="")
    assert "Approved 1." in messages_of(response)
    assert any("only submitted work" in m for m in messages_of(response))
    done.refresh_from_db()
    open_one.refresh_from_db()
    assert (done.review_status, open_one.review_status) == ("approved", "")


def test_unknown_decision_is_refused():
    with pytest.raises(InvalidDecision):
        review_submissions(assignments=[], decision="delete")
