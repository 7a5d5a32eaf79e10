"""In a real browser: the owner uploads a predictions file on the board, starts the judge against
the local fake OpenAI server, watches the run finish with its cost, and the new model is rated."""
import re

import pytest
from playwright.sync_api import expect

from evaluation.judge.services import REFERENCE
from evaluation.selectors import battles
from stats.ratings import compute_ratings
from stepruns.models import StepRun

from ..board.conftest import fake_server, judged_instance, llm_settings  # noqa: F401  (fixtures)
from ..board.test_uploads import predictions_csv
from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_uploads_predictions_judges_them_and_the_model_is_rated(page, researcher, project, llm_settings,
                                                                      fake_server):
    instances = [judged_instance(project) for _ in range(2)]
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/")
    expect(page.locator("tr[data-stage='verified'] .count")).to_have_text("2")
    expect(page.locator("table.models")).to_contain_text("model-x")
    page.locator("tr[data-stage='verified'] a.button", has_text="generate outputs").click()
    expect(page.locator("#start-generate_outputs")).to_have_attribute("open", "")

    content = predictions_csv(instances, text=lambda n: f"A much longer and more careful answer {n} " * 4)
    page.set_input_files("#id_predictions-file", files=[
        {"name": "my-vlm.csv", "mimeType": "text/csv", "buffer": content.encode()}])
    page.locator("#upload-predictions button").click()
    page.wait_for_url("**/board/judge/?new=new-vlm")
    expect(page.locator("ul.messages")).to_contain_text("my-vlm.csv: 2 rows, 2 matched to instances")
    expect(page.locator(".new-model")).to_have_text("new-vlm")
    for model in ("model-x", "model-y", "new-vlm"):
        expect(page.locator(f"input[name='judge_outputs-models'][value='{model}']")).to_be_checked()
    # Only the newcomer's pairs are judged: the board's own pairs were judged before.
    expect(page.locator("input[name='judge_outputs-involving'][value='new-vlm']")).to_be_checked()
    expect(page.locator("input[name='judge_outputs-involving'][value='model-x']")).not_to_be_checked()

    page.select_option("#id_judge_outputs-run-model", "fake-model")
    page.fill("#id_judge_outputs-run-budget_usd", "0.50")
    page.get_by_role("button", name="Start: judge").click()
    page.wait_for_url(re.compile(r".*/board/runs/\d+/$"))
    expect(page.locator("#run-status")).to_have_text("succeeded")
    run = StepRun.objects.get()
    expect(page.locator("#run-progress")).to_have_text(f"{run.done} / {run.total}")
    expect(page.locator("#run-cost")).to_have_text(format(run.cost_usd.normalize(), "f"))
    # new-vlm against model-x, model-y and the reference, on 2 instances, both orders.
    assert run.cost_usd > 0 and run.total == 12 and run.parameters["involving"] == ["new-vlm"]
    expect(page.locator("#results-link")).to_be_visible()

    ratings = compute_ratings(battles(source="judge"), reference=REFERENCE)
    assert "new-vlm" in ratings.models and ratings.models[int(ratings.rank.argmin())] == "new-vlm"

    page.goto(f"/projects/{project.slug}/")
    expect(page.locator("table.models")).to_contain_text("new-vlm")
    expect(page.locator("table.runs")).to_contain_text("judge_outputs")
    assert page.js_errors == []
