"""The whole path in chromium: a researcher creates a project, builds a pairwise round from model
outputs, opens it locally; three workers do every task; the researcher watches progress and
agreement, rejects one submission with feedback and reads the leaderboard. A researcher of another
project sees none of it."""
from __future__ import annotations

import re

import pytest

from annotation.models import Assignment, CollectionRound
from evaluation.selectors import human_battles
from projects.models import Project
from stats.ratings import compute_ratings
from tests.annotation.factories import make_project_outputs, make_worker_user

from ..conftest import PASSWORD
from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORKER_PASSWORD = "work-pass-123"
# Every worker prefers gamma to beta to alpha, so the leaderboard's order is known.
PREFERENCE = {"gamma": 3, "beta": 2, "alpha": 1}


def preferred_key(page) -> str:
    """The key that picks the response of the better model ("1" left, "2" right)."""
    left = page.locator("#response-left").text_content().split()[0]
    right = page.locator("#response-right").text_content().split()[0]
    return "1" if PREFERENCE[left] > PREFERENCE[right] else "2"


def do_every_task(browser, live_server, round_name: str, username: str) -> int:
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    done = 0
    try:
        log_in(page, username, WORKER_PASSWORD, "/work/")
        page.get_by_text(round_name).click()
        while True:
            page.wait_for_selector("#task-form[data-ready=true], #no-task")
            if page.locator("#no-task").count():
                break
            page.keyboard.press(preferred_key(page))
            with page.expect_navigation():
                page.keyboard.press("Enter")
            done += 1
        assert errors == []
    finally:
        context.close()
    return done


def test_researcher_builds_launches_watches_reviews_and_reads_results(
        page, browser, live_server, researcher, make_researcher):
    # 1. A new project, made in the browser.
    log_in(page, researcher.username, PASSWORD, "/projects/")
    page.get_by_role("link", name="New project").click()
    page.fill("#id_name", "Caption study")
    page.fill("#id_slug", "caption-study")
    page.get_by_role("button", name="Create project").click()
    page.wait_for_url("**/projects/caption-study/")
    project = Project.objects.get(slug="caption-study")
    # Its instances and the outputs of three models (as an import or the board's upload brings them).
    make_project_outputs(project=project, instances=2, stored_images=True)

    # 2. A pairwise round from the model outputs: all pairs per instance, three workers per item.
    page.get_by_role("link", name="Rounds", exact=True).click()
    page.click("#new-round")
    page.click('a[data-kind="pairwise:model_outputs"]')
    page.select_option("#id_source-sampler", "all_pairs")
    page.fill("#id_round-name", "Which answer is better")
    page.fill("#id_round-workers_per_item", "3")
    page.fill("#id_round-reward_per_task", "0.20")
    page.click("#preview-button")
    assert page.inner_text("#plan-summary").startswith("6 items")
    page.click("#create-button")
    page.wait_for_url(re.compile(r".*/rounds/\d+/$"))

    # 3. Launched locally.
    page.click("#round-open")
    page.wait_for_selector("#round-pause")
    round = CollectionRound.objects.get(project=project)
    assert round.status == CollectionRound.Status.OPEN and round.items.count() == 6

    # 4. Three workers do every task they are given.
    workers = [make_worker_user(f"crowd{n}", WORKER_PASSWORD) for n in range(3)]
    done = [do_every_task(browser, live_server, round.name, worker.username) for worker in workers]
    assert done == [6, 6, 6]

    # 5. Progress and agreement on the round's watch page.
    page.goto(f"/projects/{project.slug}/rounds/{round.pk}/")
    page.click("#round-watch-link")
    assert page.locator("#items-done .value").inner_text() == "6 / 6"
    assert page.locator("table.levels").get_by_text("3/3").is_visible()

    # 6. One submission rejected with feedback, through the review queue.
    page.goto(f"/projects/{project.slug}/review/?round={round.pk}")
    rejected = Assignment.objects.filter(round=round, worker__user=workers[2]).order_by("pk").first()
    card = page.locator(f"#submission-{rejected.pk}")
    card.locator("textarea[name=feedback]").fill("Please read both answers to the end.")
    card.get_by_role("button", name="Reject").click()
    page.get_by_text("Rejected 1 submission.").wait_for()
    rejected.refresh_from_db()
    assert (rejected.review_status, rejected.review_feedback) == ("rejected", "Please read both answers to the end.")

    # 7. The leaderboard: gamma first, alpha last, as the crowd preferred; the same as the core computes.
    page.get_by_role("link", name="Results", exact=True).click()
    rows = page.locator("table.leaderboard tbody tr")
    rows.first.wait_for()
    shown = [rows.nth(n).locator("td").nth(1).inner_text() for n in range(rows.count())]
    assert shown == ["gamma", "beta", "alpha"]
    expected = compute_ratings(human_battles(project=project), method="elo", bootstrap=200, seed=0).to_dict()
    assert shown == [row["model"] for row in expected["models"]]
    assert page.js_errors == []

    # 8. A researcher of another project sees none of it.
    stranger = make_researcher("eve")
    other = page.context.browser.new_context(base_url=live_server.url)
    eve = other.new_page()
    try:
        log_in(eve, stranger.username, PASSWORD, "/projects/")
        assert "Caption study" not in eve.content()
        for path in ("", "rounds/", f"rounds/{round.pk}/", f"rounds/{round.pk}/watch/", "review/", "results/",
                     "workers/", "releases/"):
            response = eve.goto(f"/projects/{project.slug}/{path}")
            assert response.status == 404, path
            assert "Which answer is better" not in eve.content()
        api = eve.goto(f"/api/rounds/{round.pk}/")
        assert api.status == 404
    finally:
        other.close()
