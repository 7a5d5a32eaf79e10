"""The Prolific participant's page in chromium: the task is saved on our server with the page's
token, and only then does the page take the participant to Prolific's completion URL."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from annotation.models import Assignment
from providers import services
from providers.models import Publication
from providers.prolific.provider import ProlificProvider, completion_code
from tests.annotation.browser.conftest import browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_study(chromium, prolific_fake, round):
    """A participant starts the round's study; their page records errors and Prolific's completion URL."""
    started = prolific_fake.start_submission(Publication.objects.get(round=round).external_id)
    link = urlsplit(started["study_url"])
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors, completed = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def prolific_site(route):
        completed.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p id='done'>Study complete</p>")

    page.route("https://app.prolific.com/**", prolific_site)
    return started, link, context, page, errors, completed


def test_participant_saves_then_lands_on_prolifics_completion_url(
    browser, live_server, prolific_fake, round_factory,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    started, link, context, page, errors, completed = open_study(browser, prolific_fake, round)
    page.goto(f"{live_server.url}{link.path}?{link.query}")
    assert completion_code(round) not in page.content()  # the code only comes after the save
    page.locator("#task-form[data-ready=true]").wait_for()
    page.locator("label[for=choice-left]").click()
    page.locator("#submit-button").click()
    page.locator("#done").wait_for()
    context.close()
    assert errors == []
    assert completed == [f"https://app.prolific.com/submissions/complete?cc={completion_code(round)}"]
    assignment = Assignment.objects.get()
    assert assignment.status == "submitted" and assignment.payload == {"choice": "left"}
    assert assignment.provider_assignment_id == started["id"]


def test_participant_does_three_tasks_in_one_session_then_lands_on_prolific(
    browser, live_server, prolific_fake, round_factory,  # noqa: F811
):
    round = round_factory(items=4, workers_per_item=1, reward="1.50",
                          qualification_rules={"tasks_per_participant": 3})
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    started, link, context, page, errors, completed = open_study(browser, prolific_fake, round)
    page.goto(f"{live_server.url}{link.path}?{link.query}")
    for number in range(1, 4):
        page.locator("#task-form[data-ready=true]").wait_for()
        assert completion_code(round) not in page.content()
        assert Assignment.objects.filter(round=round).count() == number
        page.locator("label[for=choice-left]").click()
        if number < 3:
            with page.expect_navigation():
                page.locator("#submit-button").click()
        else:
            page.locator("#submit-button").click()
    page.locator("#done").wait_for()
    context.close()
    assert errors == []
    assert completed == [f"https://app.prolific.com/submissions/complete?cc={completion_code(round)}"]
    session = Assignment.objects.filter(round=round, provider_assignment_id=started["id"])
    assert session.count() == 3 and set(session.values_list("status", flat=True)) == {"submitted"}
