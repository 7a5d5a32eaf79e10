"""A Prolific participant in chromium: the study information first, then the task, whose broken image
becomes a placeholder reported with the page's task token."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, ConsentDecision, ImageReport
from providers import services
from providers.models import Publication
from providers.prolific.provider import ProlificProvider
from tests.annotation.browser.conftest import browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_participant_agrees_then_reports_a_broken_image(browser, live_server, prolific_fake, round_factory):  # noqa: F811
    round = round_factory(items=1, workers_per_item=1, consent_text="Study: compare answers.\n\nStop any time.")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    started = prolific_fake.start_submission(Publication.objects.get(round=round).external_id)
    link = urlsplit(started["study_url"])
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # The items' images live on a host that answers 404.
    page.route("https://images.example.org/**", lambda route: route.fulfill(status=404, body="gone"))
    page.goto(f"{live_server.url}{link.path}?{link.query}")
    assert "Study: compare answers." in page.locator("#consent-text").text_content()
    assert page.locator("#task-form").count() == 0
    assert not Assignment.objects.exists()
    page.click("#consent-accept")
    page.locator("#task-form[data-ready=true]").wait_for()
    assert ConsentDecision.objects.get().accepted
    placeholder = page.locator(".image-placeholder").first
    placeholder.wait_for()
    image_url = placeholder.locator("a.image-placeholder-link").get_attribute("href")
    assert image_url.startswith("https://images.example.org/")
    placeholder.locator(".image-report-button").click()
    expect(page.locator(".image-report-status").first).to_contain_text("reported", timeout=15_000)
    context.close()
    assert errors == []
    report = ImageReport.objects.get()
    assert report.image_url == image_url and report.worker.provider == "prolific"
    assert report.assignment == Assignment.objects.get()
