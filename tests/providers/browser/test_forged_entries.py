"""Forged entries driven through chromium: a made-up Prolific participant with the real study id (refused
at arrival: Prolific has no such submission), and made-up MTurk assignment and worker ids with a real
HIT id (MTurk cannot vouch for an arrival: the page saves the answers, but the work completes nothing,
and sync reports it as forged)."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import pytest
from django.utils import timezone

from annotation.models import Assignment, WorkItem
from annotation.selectors import pairwise_battles
from providers import services
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider
from tests.annotation.browser.conftest import browser  # noqa: F401,F811  (fixture)

from .test_mturk_frame import TurkSite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_forged_prolific_participant_in_the_browser_completes_nothing(
    browser, live_server, prolific_fake, round_factory,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    study_id = Publication.objects.get(round=round).external_id
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    completed = []
    page.route("https://app.prolific.com/**", lambda route: (completed.append(route.request.url), route.fulfill(
        status=200, content_type="text/html", body="<p id='done'>Study complete</p>")))
    # Prolific has no such submission: the entry is refused before anything is reserved.
    response = page.goto(f"{live_server.url}/work/prolific/{round.pk}/?PROLIFIC_PID=FAKEPID1&STUDY_ID={study_id}"
                         "&SESSION_ID=FAKESESSION1")
    assert response.status == 403
    assert "does not show this task as yours" in page.content()
    assert page.locator("#task-form").count() == 0
    context.close()
    assert completed == [] and not Assignment.objects.exists()
    assert WorkItem.objects.get().completed_at is None
    assert pairwise_battles(round).empty
    assert services.pay_round(round=round).approved == 0 and prolific_fake.total_paid("reward") == 0


def test_forged_mturk_ids_in_the_framed_page_complete_nothing(
    browser, live_server, mturk_fake, round_factory, settings,  # noqa: F811
):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.get()
    with TurkSite() as turk:
        task = (f"{live_server.url}/work/mturk/{round.pk}/?assignmentId=3FORGEDASSIGNMENT1&hitId={hit.hit_id}"
                f"&workerId=AFORGED1&turkSubmitTo={quote(turk.url, safe='')}")
        settings.MTURK_ENDPOINT_URL = turk.url  # the stand-in worker site is an allowed turkSubmitTo
        settings.MTURK_FRAME_ANCESTORS = [turk.url]  # and may frame the page
        turk.choose_right_and_submit(browser, task)
    settings.MTURK_ENDPOINT_URL = mturk_fake.url
    assignment = Assignment.objects.get()
    assert assignment.status == "submitted" and assignment.confirmation == "unconfirmed"
    assert WorkItem.objects.get().completed_at is None
    # MTurk never saw it handed in; once its time is up it is forged.
    Assignment.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    report = services.sync_round(round=round, providers={"mturk": MTurkProvider(retry_pause=0)})
    assert [row["worker"] for row in report.forged] == ["AFORGED1"]
    assert Assignment.objects.get().confirmation == "forged"
    assert WorkItem.objects.get().completed_at is None and pairwise_battles(round).empty
    assert services.pay_round(round=round, providers={"mturk": MTurkProvider(retry_pause=0)}).approved == 0
    assert mturk_fake.total_paid("reward") == "0.00"
