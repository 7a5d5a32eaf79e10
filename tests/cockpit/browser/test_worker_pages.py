"""A researcher reads the worker list and a worker page, then qualifies and blocks the worker."""
import pytest

from quality.services import recompute_round_quality
from tests.annotation.browser.conftest import log_in
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker
from tests.quality.rounds import answer_all, side_choice

from ..conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = '<img src=x onerror="window.pwned=1">'


def test_a_researcher_reviews_and_blocks_a_worker(page, researcher, project):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(3)]
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=3, project=project,
                       gold_answers={2: {"winner": "a"}})
    workers = [make_worker("careful-ann"), make_worker("careful-bo"), make_worker(HOSTILE)]
    answer_all(round, workers, lambda worker, a: side_choice(a, "b" if worker == workers[2] else "a"))
    recompute_round_quality(round=round)

    log_in(page, researcher.username, PASSWORD)
    page.goto(f"/projects/{project.slug}/workers/")
    table = page.locator("#workers")
    assert table.locator("tbody tr").count() == 3
    # The hostile user name is shown as text, never run.
    row = table.locator("tbody tr", has_text="onerror")
    assert HOSTILE in row.inner_text()
    assert page.evaluate("window.pwned") is None
    assert "0 % (0/1)" in row.inner_text()

    row.get_by_role("link").click()
    page.wait_for_url(f"**/projects/{project.slug}/workers/{workers[2].pk}/")
    assert page.locator("h1").inner_text() == HOSTILE
    assert page.locator("#gold-accuracy").inner_text() == "0 % (0/1)"
    assert page.locator("#agreement").inner_text() == "0 % (2)"
    assert page.locator("#history tbody tr").count() == 3

    page.get_by_role("button", name="Qualify for this project").click()
    assert "is qualified for this project's rounds" in page.locator("ul.messages").inner_text()
    assert "qualified for this project" in page.locator("#worker-status").inner_text()

    page.get_by_label("Reason (sent to the worker's platform)").fill("Outvoted on every pair and failed the gold.")
    page.get_by_role("button", name="Block").click()
    assert "is blocked." in page.locator("ul.messages").inner_text()
    assert page.locator("#worker-status").inner_text().startswith("blocked")
    assert page.get_by_role("button", name="Block").count() == 0
    workers[2].refresh_from_db()
    assert workers[2].is_blocked
    assert page.js_errors == []
