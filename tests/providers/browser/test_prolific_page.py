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


def test_participant_saves_then_lands_on_prolifics_completion_url(
    browser, live_server, prolific_fake, round_factory,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    started = prolific_fake.start_submission(Publication.objects.get(round=round).external_id)
    link = urlsplit(started["study_url"])
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors, completed = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def prolific_site(route):
        completed.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p id='done'>Study complete</p>")

    page.route("https://app.prolific.com/**", prolific_site)
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
