"""A researcher builds a pairwise round in chromium: all pairs, preview with balance and cost,
create the draft, open it locally, preview a task as a worker sees it."""
import re

import pytest

from annotation.models import Assignment, CollectionRound
from tests.annotation.factories import make_project_outputs

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_build_preview_create_open_and_preview_a_pairwise_round(page, researcher, project):
    instance = make_project_outputs(project=project, stored_images=True)[-1]
    instance.model_outputs.filter(model_name="alpha").update(text="<b>bold</b> <img src=x onerror=window.__pwned=1>")

    log_in_researcher(page, researcher.username)
    page.goto(f"/projects/{project.slug}/rounds/")
    page.click("#new-round")
    page.click('a[data-kind="pairwise:model_outputs"]')
    page.select_option("#id_source-sampler", "all_pairs")
    page.fill("#id_source-seed", "11")
    page.fill("#id_round-name", "Pairwise, batch 1")
    page.fill("#id_round-workers_per_item", "3")
    page.fill("#id_round-reward_per_task", "0.30")
    page.fill("#id_round-budget_cap", "50")
    page.select_option("#id_round-provider", "prolific")
    page.click("#preview-button")

    assert page.inner_text("#plan-summary").startswith("9 items")
    per_model = page.locator("#balance-per-model tbody tr")
    assert per_model.count() == 3
    assert {per_model.nth(row).inner_text().split("\t")[1] for row in range(3)} == {"6"}
    assert page.locator("#balance-per-instance tbody tr").count() == 3
    # 27 tasks at 0.30 = 8.10, plus Prolific's fee; within the cap of 50.
    assert "8.10 USD" in page.inner_text("#cost-estimate")
    assert "within the cap" in page.inner_text("#cost-budget")
    assert not CollectionRound.objects.exists()

    page.click("#create-button")
    page.wait_for_url(re.compile(r".*/rounds/\d+/$"))
    assert page.inner_text("#round-status") == "Draft"
    assert page.locator("#round-items tbody tr").count() == 9
    assert page.locator("#extend-form").count() == 0  # nothing under way to extend in a draft
    assert page.locator("#round-items tbody tr td").first.inner_text() == "1"  # items count from 1
    round = CollectionRound.objects.get()
    assert round.items.count() == 9 and round.workers_per_item == 3

    page.click("#round-open")
    page.wait_for_selector("#round-pause")
    assert page.inner_text("#round-status") == "Open"
    assert page.locator("#extend-form").is_visible()

    with page.expect_navigation():
        page.locator("#round-items a", has_text="Preview").first.click()
    page.wait_for_selector("#task-form[data-ready=true]")
    assert "nothing is reserved" in page.inner_text("#preview-note")
    assert page.locator("#submit-button").is_disabled()
    assert page.locator("#submit-button").evaluate("b => getComputedStyle(b).cursor") == "not-allowed"
    assert float(page.locator("#submit-button").evaluate("b => getComputedStyle(b).opacity")) < 1
    page.keyboard.press("1")
    assert page.locator("#choice-left").is_checked()
    page.keyboard.press("Enter")
    assert "submitting is disabled" in page.inner_text("#task-status")
    assert not Assignment.objects.exists()

    # The output with markup is shown as text wherever it appears.
    item = round.items.filter(output_a__model_name="alpha", output_a__instance=instance).first() or \
        round.items.filter(output_b__model_name="alpha", output_b__instance=instance).first()
    page.goto(f"/projects/{project.slug}/rounds/{round.pk}/items/{item.pk}/preview/")
    page.wait_for_selector("#task-form[data-ready=true]")
    assert "<b>bold</b>" in page.inner_text(".pair")
    assert page.evaluate("window.__pwned") is None
    assert page.js_errors == []
