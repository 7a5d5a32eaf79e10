"""A researcher fixes a draft made with reward 0.00 and replaces its items on the edit page, opens it,
is told an open round cannot be edited, and clones it into a new draft, in chromium."""
import re
from decimal import Decimal

import pytest

from annotation.models import CollectionRound
from annotation.services.rounds import create_round
from tests.annotation.factories import make_project_outputs

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edit_a_draft_then_clone_the_open_round(page, researcher, project):
    make_project_outputs(project=project)
    round = create_round(name="From the API", task_type="pairwise", project=project, created_by=researcher)
    assert round.reward_per_task == Decimal("0.00") and not round.items.exists()

    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/rounds/{round.pk}/")
    page.click("#round-edit")
    page.wait_for_url(f"**/rounds/{round.pk}/edit/")
    assert page.input_value("#id_round-reward_per_task") == "0.00"
    assert "0 items are kept" in page.inner_text("#items-kept")
    page.click('a[data-source="model_outputs"]')
    page.wait_for_url("**?source=model_outputs")
    page.select_option("#id_source-sampler", "all_pairs")
    page.fill("#id_source-seed", "5")
    page.fill("#id_round-name", "Battles, fixed")
    page.fill("#id_round-reward_per_task", "0.25")
    page.click("#preview-button")
    assert page.inner_text("#plan-summary").startswith("9 items")
    round.refresh_from_db()
    assert round.reward_per_task == Decimal("0.00") and not round.items.exists()  # a preview writes nothing

    page.click("#save-button")
    page.wait_for_url(re.compile(rf".*/rounds/{round.pk}/$"))
    assert "saved" in page.inner_text(".messages")
    assert page.locator("#round-items tbody tr").count() == 9
    round.refresh_from_db()
    assert (round.name, round.reward_per_task, round.items.count()) == ("Battles, fixed", Decimal("0.25"), 9)

    page.click("#round-open")
    page.wait_for_selector("#round-pause")
    assert page.locator("#round-edit").count() == 0
    page.goto(f"/projects/{project.slug}/rounds/{round.pk}/edit/")
    assert "Only a draft round can be edited" in page.inner_text("#edit-refusal")

    page.fill("#id_name", "Battles, second batch")
    page.click("#clone-button")
    page.wait_for_url(re.compile(r".*/rounds/\d+/$"))
    copy = CollectionRound.objects.get(name="Battles, second batch")
    assert page.url.endswith(f"/rounds/{copy.pk}/")
    assert page.inner_text("#round-status") == "Draft"
    assert page.locator("#round-items tbody tr").count() == 9
    assert copy.reward_per_task == Decimal("0.25") and page.locator("#round-edit").is_visible()
    assert page.js_errors == []
