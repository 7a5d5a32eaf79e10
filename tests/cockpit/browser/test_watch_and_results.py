"""A researcher watches a round with submissions, reads the leaderboard, downloads its JSON and makes a
release, in a real browser."""
import hashlib
import json

import pytest

from evaluation.selectors import human_battles
from stats.ratings import compute_ratings
from tests.annotation.browser.conftest import images_loaded

from .conftest import log_in_researcher as log_in
from ..results_data import judged_project

pytestmark = pytest.mark.django_db(transaction=True)


def test_researcher_watches_a_round_and_downloads_the_leaderboard(page, researcher, project, settings, tmp_path):
    data = judged_project(project)
    watch_url = f"/projects/{project.slug}/rounds/{data.pairwise.pk}/watch/"
    log_in(page, researcher.username, watch_url)

    assert page.locator("#items-done .value").inner_text() == "11 / 12"
    assert page.locator("#in-flight .value").inner_text() == "1"
    assert "20.00 USD/h" in page.locator("#wage").inner_text()
    # Each label of a figure on its own line: run together they read "… tasks)effective hourly wage".
    labels = page.locator("#wage .label")
    assert labels.count() == 2
    assert labels.nth(0).bounding_box()["y"] < labels.nth(1).bounding_box()["y"]
    assert page.locator("table.levels").get_by_text("3/3").is_visible()
    assert page.locator("table.throughput tbody tr").count() >= 1
    page.fill("input[name=target]", "6")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**target=6")
    assert page.locator("table.coverage tr.reached").count() == 1

    page.get_by_role("link", name="Watch", exact=True).click()
    page.get_by_role("link", name=data.pairwise.name).wait_for()

    page.get_by_role("link", name="Results", exact=True).click()
    page.select_option("select[name=method]", "bt")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**method=bt**")
    rows = page.locator("table.leaderboard tbody tr")
    assert rows.count() == 3
    assert images_loaded(page.locator("img.plot").first)

    with page.expect_download() as download_info:
        page.locator("#leaderboard-json").click()
    body = json.loads(download_info.value.path().read_text())
    expected = compute_ratings(human_battles(project=project), method="bt", bootstrap=200, seed=0,
                               reference=settings.ANNOTATION_REFERENCE_SIDE_NAME).to_dict()
    assert [row["model"] for row in body["models"]] == [row["model"] for row in expected["models"]]
    assert rows.first.locator("td").nth(1).inner_text() == body["models"][0]["model"]
    assert page.js_errors == []


def test_owner_makes_a_release_and_downloads_its_checksums(page, researcher, project, settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    judged_project(project)
    log_in(page, researcher.username, f"/projects/{project.slug}/releases/")
    page.fill("input[name=name]", "study")
    page.fill("input[name=version]", "1.0.0")
    page.get_by_role("button", name="Make release").click()
    page.get_by_text("Release study 1.0.0 made.").wait_for()
    with page.expect_download() as download_info:
        page.get_by_role("link", name="SHA256SUMS").click()
    sums = download_info.value.path().read_text()
    first_digest, first_name = sums.splitlines()[0].split("  ", 1)
    page.locator("details summary").click()
    with page.expect_download() as download_info:
        page.get_by_role("link", name=first_name, exact=True).click()
    assert hashlib.sha256(download_info.value.path().read_bytes()).hexdigest() == first_digest

    page.fill("input[name=name]", "study")
    page.fill("input[name=version]", "1.0.0")
    page.get_by_role("button", name="Make release").click()
    assert "exists; releases never change" in page.content()


def test_results_page_says_when_it_was_computed_and_recomputes(page, researcher, project):
    from evaluation.models import StoredResult
    from evaluation.stored_results import refresh_results

    judged_project(project)
    refresh_results(project=project)
    computed = StoredResult.objects.get(project=project, kind="leaderboard", key="human/elo/200/0").computed_at
    log_in(page, researcher.username, f"/projects/{project.slug}/results/")
    status = page.locator("#stored-results")
    assert "Computed at" in status.inner_text() and "from 35 judgments" in status.inner_text()
    page.get_by_role("button", name="Recompute now").click()
    page.get_by_text("The results were recomputed.").wait_for()
    assert StoredResult.objects.get(project=project, kind="leaderboard", key="human/elo/200/0").computed_at > computed
    page.get_by_role("link", name="IRR results").click()
    assert "Computed at" in page.locator("#stored-results").inner_text()
    assert page.js_errors == []
