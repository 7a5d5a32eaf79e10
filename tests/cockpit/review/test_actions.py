"""Approve and reject from the review queue, one by one and in bulk, through the one review path:
decisions reach the MTurk and Prolific fakes, refusals are reported, hostile requests change nothing."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from projects.services import create_project
from providers import services
from providers.models import Publication
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider
from tests.providers.conftest import pairwise_round
from tests.providers.test_mturk import work
from tests.providers.test_prolific import LONG_REASON, participate

from ..conftest import PASSWORD
from .submitted import pairwise_submission
from .test_queue import card, login, queue_url

pytestmark = pytest.mark.django_db
TRANSITION = "POST /api/v1/submissions/{id}/transition/"


def decide(client, project, ids, decision, feedback="", **extra):
    return client.post(reverse("cockpit:review-decide", args=[project.slug]),
                       {"ids": ids, "decision": decision, "feedback": feedback, **extra})


def messages_after(client, response) -> str:
    assert response.status_code == 302, response.content[:300]
    return client.get(response["Location"]).content.decode()


def states(assignments) -> list[tuple[str, str]]:
    return sorted(Assignment.objects.filter(pk__in=[a.pk for a in assignments])
                  .values_list("review_status", "review_feedback"))


def mturk_round(project, mturk_fake, *, items=2):
    round = pairwise_round(items=items, workers_per_item=1, project=project)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    assert work(mturk_fake, round, workers=1) == items
    return round


def test_bulk_approve_and_reject_with_feedback_reach_mturk(client, researcher, project, mturk_fake):
    round = mturk_round(project, mturk_fake, items=4)
    first, second, third, fourth = Assignment.objects.filter(round=round).order_by("pk")
    client = login(client, researcher)
    html = messages_after(client, decide(client, project, [first.pk, second.pk], "approve", "Thank you & well done."))
    assert "Approved 2 submissions." in html
    approved = {call.params["AssignmentId"]: call.params.get("RequesterFeedback")
                for call in mturk_fake.calls("ApproveAssignment")}
    assert approved == {first.provider_assignment_id: "Thank you & well done.",
                        second.provider_assignment_id: "Thank you & well done."}
    feedback = "Both choices came <b>before</b> the images loaded."
    html = messages_after(client, decide(client, project, [third.pk, fourth.pk], "reject", feedback))
    assert "Rejected 2 submissions." in html
    rejected = {call.params["AssignmentId"]: call.params["RequesterFeedback"]
                for call in mturk_fake.calls("RejectAssignment")}
    assert rejected == {third.provider_assignment_id: feedback, fourth.provider_assignment_id: feedback}
    client_mturk = MTurkProvider(retry_pause=0).client
    for assignment, status in [(first, "Approved"), (third, "Rejected")]:
        remote = client_mturk.get_assignment(AssignmentId=assignment.provider_assignment_id)["Assignment"]
        assert remote["AssignmentStatus"] == status
    assert states([first, second, third, fourth]) == [
        ("approved", "Thank you & well done."), ("approved", "Thank you & well done."),
        ("rejected", feedback), ("rejected", feedback)]
    # The rejected ones are listed with the feedback sent, escaped.
    rejected_page = client.get(queue_url(project, status="rejected")).content.decode()
    assert "Both choices came &lt;b&gt;before&lt;/b&gt; the images loaded." in card(rejected_page, third)


def test_re_review_is_refused_as_the_review_path_says(client, researcher, project, mturk_fake):
    round = mturk_round(project, mturk_fake, items=1)
    assignment = Assignment.objects.get(round=round)
    client = login(client, researcher)
    messages_after(client, decide(client, project, [assignment.pk], "approve"))
    again = messages_after(client, decide(client, project, [assignment.pk], "approve"))
    assert f"Submission {assignment.pk} (" in again and "already had this decision" in again
    flip = messages_after(client, decide(client, project, [assignment.pk], "reject", "Changed my mind."))
    assert f"Submission {assignment.pk} (" in flip and "was not changed" in flip
    assert len(mturk_fake.calls("ApproveAssignment")) == 1
    assert states([assignment]) == [("approved", "")]
    local = pairwise_submission(project)
    messages_after(client, decide(client, project, [local.pk], "reject", "Not the better one."))
    flip = messages_after(client, decide(client, project, [local.pk], "approve"))
    assert "A submission that is rejected cannot be approved." in flip
    assert states([local]) == [("rejected", "Not the better one.")]


def test_prolific_bulk_decisions_and_its_refusals_are_reported_per_submission(
        client, researcher, project, prolific_fake):
    round = pairwise_round(items=3, workers_per_item=1, reward="1.50", project=project)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    participate(prolific_fake, round, 3)
    first, second, third = Assignment.objects.filter(round=round).order_by("pk")
    client = login(client, researcher)
    # Prolific wants 100+ characters to reject: refused there, reported here, nothing recorded.
    short = messages_after(client, decide(client, project, [first.pk, second.pk], "reject", "Too fast."))
    assert short.count("was not changed") == 2 and "at least 100 characters" in short
    assert states([first, second]) == [("submitted", ""), ("submitted", "")]
    assert not prolific_fake.calls(TRANSITION)
    html = messages_after(client, decide(client, project, [first.pk, second.pk], "reject", LONG_REASON))
    assert "Rejected 2 submissions." in html
    html = messages_after(client, decide(client, project, [third.pk], "approve", "Thanks."))
    assert "Approved 1 submission." in html
    bodies = {call.params["path_id"]: call.params["body"] for call in prolific_fake.calls(TRANSITION)}
    assert bodies[first.provider_assignment_id]["action"] == "REJECT"
    assert bodies[first.provider_assignment_id]["message"] == LONG_REASON
    assert bodies[third.provider_assignment_id] == {"action": "APPROVE"}
    remote = {s["id"]: s["status"] for s in ProlificProvider(retry_pause=0)._request(
        "GET", f"studies/{Publication.objects.get(round=round).external_id}/submissions/")["results"]}
    assert remote == {first.provider_assignment_id: "REJECTED", second.provider_assignment_id: "REJECTED",
                      third.provider_assignment_id: "APPROVED"}


def test_a_rejection_reopens_the_slot_for_another_worker(client, researcher, project):
    assignment = pairwise_submission(project)
    item = assignment.item
    item.refresh_from_db()
    assert item.completed_at is not None
    client = login(client, researcher)
    messages_after(client, decide(client, project, [assignment.pk], "reject", "Chosen at random."))
    item.refresh_from_db()
    assert item.completed_at is None
    from tests.annotation.factories import make_worker
    again = request_assignment(round=assignment.round, worker=make_worker())
    assert again is not None and again.item_id == item.pk


def test_forged_ids_of_another_project_refuse_the_whole_request(client, researcher, project, make_researcher,
                                                                mturk_fake):
    round = mturk_round(project, mturk_fake, items=1)
    mine = Assignment.objects.get(round=round)
    other = create_project(name="Study B", slug="study-b", owner=make_researcher("hopper"))
    theirs = pairwise_submission(other)
    client = login(client, researcher)
    for ids in ([mine.pk, theirs.pk], [theirs.pk], [mine.pk, 10**9]):
        response = decide(client, project, ids, "reject", "Forged.")
        assert response.status_code == 404
        assert "nothing was reviewed" in response.content.decode()
    # Through the other project's slug (not a member there) nothing is found either.
    assert decide(client, other, [theirs.pk], "approve").status_code == 404
    # What the decision form refuses comes back as a message on the queue it came from.
    for ids, problem in [(["1; DROP TABLE"], "submission 1"), ([], "Choose at least one submission."),
                         ([str(mine.pk), "2.5"], "submission 2"), ([10**20], "submission 1")]:
        response = decide(client, project, ids, "approve")
        assert problem in messages_after(client, response), ids
    assert "decision" in messages_after(client, decide(client, project, [mine.pk], "delete"))
    assert "A rejection needs feedback" in messages_after(client, decide(client, project, [mine.pk], "reject", "   "))
    assert "feedback" in messages_after(client, decide(client, project, [mine.pk], "approve", "x" * 1025))
    assert states([mine, theirs]) == [("submitted", ""), ("submitted", "")]
    assert not mturk_fake.calls("ApproveAssignment") and not mturk_fake.calls("RejectAssignment")


def test_only_owners_review(client, researcher, project, collaborator, make_researcher):
    assignment = pairwise_submission(project)
    assert decide(login(client, collaborator), project, [assignment.pk], "approve").status_code == 403
    client.logout()
    assert decide(login(client, make_researcher("stranger")), project, [assignment.pk], "approve").status_code == 404
    client.logout()
    response = decide(client, project, [assignment.pk], "approve")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    client.login(username=researcher.username, password=PASSWORD)
    assert client.get(reverse("cockpit:review-decide", args=[project.slug])).status_code == 405
    assert states([assignment]) == [("submitted", "")]


def test_the_decision_returns_to_the_filtered_queue_and_nowhere_else(client, researcher, project):
    first, second = pairwise_submission(project), pairwise_submission(project)
    client = login(client, researcher)
    back = queue_url(project, status="all", round=first.round_id)
    response = decide(client, project, [first.pk], "approve", back=back)
    assert response["Location"] == back
    for hostile in ("https://evil.example/projects/study-a/review/", "//evil.example/", "/admin/"):
        response = decide(client, project, [second.pk], "approve", back=hostile)
        assert response["Location"] == queue_url(project)


def test_a_refused_rejection_returns_to_the_filtered_queue_with_the_message(client, researcher, project):
    assignment = pairwise_submission(project)
    client = login(client, researcher)
    back = queue_url(project, status="all", round=assignment.round_id)
    response = decide(client, project, [assignment.pk], "reject", "", back=back)
    assert response.status_code == 302 and response["Location"] == back
    page = client.get(back).content.decode()
    assert "Nothing was reviewed. feedback: A rejection needs feedback to the worker." in page
    assert 'class="project-nav"' in page.split("A rejection needs feedback")[0]
    assert states([assignment]) == [("submitted", "")]
