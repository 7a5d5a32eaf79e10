"""A task the page shows is held for a look; the worker's first input starts it, and submitting
shows the next task from submit-and-next's answer."""
import re
import time

import pytest
from django.db import OperationalError
from playwright.sync_api import expect

from annotation.models import Assignment

from ..factories import make_instance, make_outputs, make_round, make_worker_user
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def read(query, seconds: float = 10.0):
    """A read of the test's SQLite database while the live server may be writing to it: shared-cache
    SQLite answers "table is locked" at once instead of waiting, so the read is tried again."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return query()
        except OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_the_first_key_starts_the_task_and_submitting_shows_the_next_one(page, settings):
    settings.TASK_PREVIEW_SECONDS = 120
    round = make_round(task_type="pairwise", time_limit_seconds=1800,
                       targets=[tuple(make_outputs(instance=make_instance())) for _ in range(2)])
    user = make_worker_user()
    log_in(page, user.username)
    page.click(f"text={round.name}")
    page.wait_for_selector("#task-form[data-ready=true]")
    first = read(lambda: Assignment.objects.get(round=round))
    assert first.in_preview
    # Not started: the whole time limit, standing still.
    expect(page.locator("#task-timer")).to_have_text("30:00")
    page.wait_for_timeout(1500)
    expect(page.locator("#task-timer")).to_have_text("30:00")

    # Each database read waits for the server's answer: shared-cache SQLite refuses a write while
    # another connection reads the table, so the test never reads while the server writes.
    with page.expect_response(lambda response: response.url.endswith(f"/{first.pk}/start/")) as started:
        page.keyboard.press("1")  # choose the left answer: the task starts
    assert started.value.ok
    assert not read(lambda: Assignment.objects.get(pk=first.pk).in_preview)
    expect(page.locator("#task-timer")).not_to_have_text("30:00", timeout=5000)

    with page.expect_response(lambda response: "/submit-and-next/" in response.url) as submitted:
        page.get_by_role("button", name="Submit").click()
    assert submitted.value.ok
    # A locator, not wait_for_function: the page's CSP forbids eval, which a string predicate
    # polled by the browser needs, and the refusal would show as a page error.
    expect(page.locator("#task-form[data-ready=true]")).not_to_have_attribute(
        "data-start-url", re.compile(f"/{first.pk}/"))
    assert read(lambda: Assignment.objects.filter(round=round).count()) == 2
    second = read(lambda: Assignment.objects.exclude(pk=first.pk).get(round=round))
    assert read(lambda: Assignment.objects.get(pk=first.pk).status) == Assignment.Status.SUBMITTED
    assert second.in_preview and second.status == Assignment.Status.ASSIGNED
    expect(page.locator("#task-form")).to_have_attribute("data-start-url", f"/api/work/assignments/{second.pk}/start/")
    assert page.js_errors == []
