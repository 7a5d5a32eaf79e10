"""A researcher reviews an MTurk worker's pairwise submission in a real browser; the worker's feedback
reaches MTurk, where MTurk workers read it."""
from __future__ import annotations

import pytest

from annotation.models import Assignment
from datasets_app.models import ModelOutput
from providers import services
from providers.mturk.provider import MTurkProvider
from tests.annotation.browser.conftest import images_loaded
from tests.annotation.factories import make_instance, make_outputs, make_round
from tests.providers.test_mturk import work

from ..conftest import PASSWORD
from .submitted import pairwise_submission

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


def test_researcher_rejects_a_pairwise_submission_with_feedback(page, researcher, project, mturk_fake):
    instance = make_instance(stored_images=True)
    first, second = make_outputs(instance=instance)
    ModelOutput.objects.filter(pk=second.pk).update(text=f"Two circles. {HOSTILE}")
    round = make_round(task_type="pairwise", targets=[(first, second)], project=project)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    assert work(mturk_fake, round, workers=1) == 1
    assignment = Assignment.objects.get(round=round)

    page.goto(f"/accounts/login/?next=/projects/{project.slug}/review/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"**/projects/{project.slug}/review/")

    card = page.locator(f"#submission-{assignment.pk}")
    card.locator("img").first.wait_for()
    assert images_loaded(card.locator(".images img"))  # the worker's image(s), loaded
    left, right = card.locator(".response-text").all_inner_texts()
    texts = {"a": "model-x says something.", "b": f"Two circles. {HOSTILE}"}
    assert (left, right) == (texts[assignment.presentation["left"]], texts[assignment.presentation["right"]])
    assert page.evaluate("window.pwned") is None  # the worker text stayed text
    assert card.locator(".worker-label").inner_text() == f"mturk worker #{assignment.worker_id}"  # not its MTurk id
    assert "AWORKER0" not in page.content()

    # Rejecting without feedback is stopped in the browser: the feedback is required to reject.
    card.get_by_role("button", name="Reject").click()
    assert card.locator("textarea[name=feedback]").evaluate("t => t.matches(':invalid') && t.validity.valueMissing")
    assert page.url.endswith(f"/projects/{project.slug}/review/")
    assert Assignment.objects.get(pk=assignment.pk).review_status == "submitted"

    feedback = "You chose before reading the second response; please read both."
    card.locator("textarea[name=feedback]").fill(feedback)
    card.get_by_role("button", name="Reject").click()
    page.get_by_text("Rejected 1 submission.").wait_for()
    assert page.locator(f"#submission-{assignment.pk}").count() == 0  # no longer awaiting review

    # Where an MTurk worker reads it: the assignment's RequesterFeedback at MTurk.
    remote = MTurkProvider(retry_pause=0).client.get_assignment(AssignmentId=assignment.provider_assignment_id)
    assert remote["Assignment"]["AssignmentStatus"] == "Rejected"
    assert remote["Assignment"]["RequesterFeedback"] == feedback

    page.select_option("#id_status", "rejected")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**status=rejected**")
    rejected = page.locator(f"#submission-{assignment.pk}")
    assert rejected.locator(".feedback-text").inner_text() == feedback
    assert rejected.locator(".review-status").inner_text() == "Rejected"
    assert page.js_errors == []


def test_researcher_approves_ticked_submissions_in_bulk(page, researcher, project):
    ticked = [pairwise_submission(project) for _ in range(2)]
    left_alone = pairwise_submission(project)
    page.goto(f"/accounts/login/?next=/projects/{project.slug}/review/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"**/projects/{project.slug}/review/")
    for assignment in ticked:
        page.locator(f"#submission-{assignment.pk} input[type=checkbox]").check()
    page.fill("#bulk-feedback", "Thank you, careful work.")
    page.get_by_role("button", name="Approve ticked").click()
    page.get_by_text("Approved 2 submissions.").wait_for()
    assert [page.locator(f"#submission-{a.pk}").count() for a in [*ticked, left_alone]] == [0, 0, 1]
    assert sorted(Assignment.objects.filter(round__project=project).values_list("review_status", "review_feedback")) == [
        ("approved", "Thank you, careful work."), ("approved", "Thank you, careful work."), ("submitted", "")]
    assert page.js_errors == []
