"""In chromium: an owner writes a round's study information on the round page, opens the round, and a
worker is shown that text before their first task."""
from decimal import Decimal

import pytest

from annotation import round_builder
from annotation.models import ConsentDecision
from tests.annotation.browser.conftest import log_in
from tests.annotation.factories import make_project_outputs, make_worker_user

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_writes_study_information_and_a_worker_agrees_to_it(browser, page, researcher, project):
    make_project_outputs(project=project, instances=1, models=("alpha", "beta"), stored_images=True)
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=researcher,
        settings={"name": "Consent round", "task_type": "pairwise", "reward_per_task": Decimal("0.50")},
        source="model_outputs", params={"sampler": "all_pairs", "seed": 1})
    log_in_researcher(page, researcher.username)
    page.goto(f"/projects/{project.slug}/rounds/{round.pk}/")
    assert page.locator("#round-consent-none").is_visible()
    # Said once, as the section's heading; the field keeps its name for assistive technology.
    assert page.locator("#consent-heading").inner_text() == "Study information and consent"
    assert page.locator("#consent-form label[for=id_consent_text]").evaluate("l => l.getBoundingClientRect().width") <= 1
    assert page.get_by_role("textbox", name="Study information and consent").is_visible()
    page.fill("#id_consent_text", "We study image answers.\n\nYou may stop <any> time.")
    page.click("#consent-save")
    page.wait_for_selector("#round-consent-text")
    assert page.locator("#round-consent-text p").count() == 2
    assert "You may stop <any> time." in page.locator("#round-consent-text").text_content()
    page.click("#round-open")
    page.wait_for_selector("#round-status.status-open")

    worker_page = browser.new_context(base_url=page.url.split("/projects/")[0]).new_page()
    worker = make_worker_user()
    log_in(worker_page, worker.username)
    worker_page.click("text=Consent round")
    worker_page.wait_for_url(f"**/work/rounds/{round.pk}/consent/")
    assert "We study image answers." in worker_page.locator("#consent-text").text_content()
    worker_page.click("#consent-accept")
    worker_page.wait_for_selector("#task-form[data-ready=true]")
    assert ConsentDecision.objects.get().worker.user == worker
    worker_page.context.close()
    assert page.js_errors == []
