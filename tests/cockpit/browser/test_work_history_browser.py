"""In chromium: a local worker submits a task, the researcher rejects it with feedback in the
cockpit's review queue, and the worker sees a notice on the work list and the feedback (as text)
on "My work"."""
from __future__ import annotations

import pytest

from annotation.models import Assignment
from datasets_app.models import ModelOutput
from tests.annotation.factories import make_project_outputs, make_round, make_worker_user

from ..conftest import PASSWORD
from .conftest import log_in
from .test_whole_path import WORKER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FEEDBACK = 'Please read both answers <b>to the end</b> & <script>alert("x")</script>.'


def test_worker_reads_the_researchers_feedback_on_my_work(page, browser, live_server, researcher, project):
    [instance] = make_project_outputs(project=project, instances=1, models=("alpha", "beta"))
    round = make_round(task_type="pairwise", targets=[tuple(ModelOutput.objects.filter(instance=instance))],
                       project=project)
    worker = make_worker_user("crowd-a", WORKER_PASSWORD)

    # The worker does the task in their own browser.
    context = browser.new_context(base_url=live_server.url)
    work = context.new_page()
    work.set_default_timeout(15_000)
    errors = []
    work.on("pageerror", lambda error: errors.append(str(error)))
    log_in(work, worker.username, WORKER_PASSWORD, "/work/")
    assert work.locator("#new-feedback").count() == 0
    work.get_by_text(round.name).click()
    work.wait_for_selector("#task-form[data-ready=true]")
    work.keyboard.press("1")
    with work.expect_navigation():
        work.keyboard.press("Enter")
    work.goto("/work/history/")
    row = work.locator("table.work-history tbody tr")
    assert row.count() == 1
    assert row.locator(".review").inner_text() == "pending"

    # The researcher rejects it with feedback in the review queue.
    log_in(page, researcher.username, PASSWORD, "/projects/")
    page.goto(f"/projects/{project.slug}/review/?round={round.pk}")
    submission = Assignment.objects.get(round=round, worker__user=worker)
    card = page.locator(f"#submission-{submission.pk}")
    card.locator("textarea[name=feedback]").fill(FEEDBACK)
    card.get_by_role("button", name="Reject").click()
    page.get_by_text("Rejected 1 submission.").wait_for()

    # The worker's work list says there is feedback; "My work" shows it, as text.
    work.goto("/work/")
    notice = work.locator("#new-feedback")
    assert notice.is_visible()
    notice.get_by_role("link").click()
    work.wait_for_url("**/work/history/")
    row = work.locator("table.work-history tbody tr")
    assert row.locator(".review").inner_text() == "rejected"
    assert row.locator(".feedback").inner_text() == FEEDBACK
    assert row.locator(".feedback b, .feedback script").count() == 0
    assert "new-feedback" in row.get_attribute("class")
    assert row.locator(".earned").inner_text() == "0.00 USD"
    # Seen: the notice is gone, and the site header links to "My work".
    work.goto("/work/")
    assert work.locator("#new-feedback").count() == 0
    work.locator("#nav-history").click()
    work.wait_for_url("**/work/history/")
    assert errors == []
    context.close()
