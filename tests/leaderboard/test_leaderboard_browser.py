"""In a real browser: an owner opens the project to outside submissions and hands out a token; an
outside lab submits predictions with it over HTTP; the owner sees the submission judged and the
lab's model on the judge leaderboard."""
import httpx
import pytest
from playwright.sync_api import expect

from tests.cockpit.board.conftest import judged_instance
from tests.cockpit.board.test_uploads import predictions_csv
from tests.cockpit.browser.conftest import browser, log_in_researcher, page, served_media  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_outside_lab_submits_with_a_token_and_its_model_reaches_the_board(
        page, live_server, researcher, project, llm_settings, fake_server):
    board = [judged_instance(project) for _ in range(2)]
    log_in_researcher(page, researcher.username, f"/projects/{project.slug}/")
    page.get_by_role("link", name="Leaderboard submissions").click()
    expect(page.locator("h1")).to_have_text("Leaderboard submissions")
    page.check("#id_accepts_outside_submissions")
    page.select_option("#id_judge_model", "fake-model")
    page.fill("#id_budget_usd", "0.50")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("ul.messages")).to_contain_text("Submission settings saved.")
    expect(page.locator("#id_accepts_outside_submissions")).to_be_checked()

    page.fill("#id_label", "Vision <Lab>")
    page.get_by_role("button", name="Create a submission token").click()
    token = page.locator("#new-token").inner_text()
    expect(page.locator(".new-token")).to_contain_text("Submission token for Vision <Lab>")
    expect(page.locator("table.tokens")).to_contain_text(token[:12])

    content = predictions_csv(board, model="lab-vlm", text=lambda n: f"A long and careful answer {n} " * 5)
    response = httpx.post(f"{live_server.url}/api/leaderboard/{project.slug}/submissions/",
                          headers={"Authorization": f"Token {token}"}, files={"file": ("lab.csv", content)},
                          timeout=60)
    assert response.status_code == 202, response.text
    status = httpx.get(f"{live_server.url}/api/leaderboard/{project.slug}/submissions/{response.json()['id']}/",
                       headers={"Authorization": f"Token {token}"}).json()
    assert status["status"] == "succeeded" and status["judged"] == {"done": 12, "total": 12}

    page.reload()
    row = page.locator("table.submissions tbody tr").first
    expect(row).to_contain_text("Vision <Lab>")
    expect(row).to_contain_text("lab-vlm")
    expect(row).to_contain_text("succeeded (12 / 12)")
    expect(row).to_contain_text("2 / 2")
    page.click("#judge-board-link")
    expect(page.locator("table.leaderboard tbody tr").first).to_contain_text("lab-vlm")
    assert page.js_errors == []
