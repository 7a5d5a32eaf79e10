"""The API tokens page in a real browser: a token is shown once, works for the API, and stops
working when revoked; the API documentation page renders from local assets."""
from __future__ import annotations

import pytest

from tests.cockpit.conftest import PASSWORD

from .conftest import log_in_researcher as log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_use_and_revoke_a_token(page, researcher, project, live_server):
    log_in(page, researcher.username, "/projects/")
    page.click("header >> text=API tokens")
    page.wait_for_url("**/projects/api-tokens/")
    assert page.locator("text=You have no tokens.").is_visible()

    page.click("button:has-text('Create a token')")  # a name is needed: the browser asks for it
    assert page.locator("#id_name:invalid").count() == 1
    assert page.locator("#new-token").count() == 0
    page.fill("#id_name", "laptop scripts")
    page.click("button:has-text('Create a token')")
    token = page.locator("#new-token").inner_text()
    assert page.locator("table.tokens .token-name").inner_text() == "laptop scripts"
    assert len(token) == 64
    key = page.locator("table.tokens code").first.inner_text().rstrip("…")
    assert token.startswith(key)

    api = page.context.request
    answer = api.get(f"{live_server.url}/api/projects/", headers={"Authorization": f"Token {token}"})
    assert answer.status == 200 and answer.json()["results"][0]["slug"] == "study-a"

    page.goto("/projects/api-tokens/")  # shown once: a fresh visit lists it without the token
    assert page.locator("#new-token").count() == 0
    assert token not in page.content()

    page.click("button[name=revoke][value='laptop scripts']")
    page.wait_for_url("**/projects/api-tokens/")
    assert page.locator("text=Token 'laptop scripts' revoked.").is_visible()
    assert page.locator("text=You have no tokens.").is_visible()
    revoked = api.get(f"{live_server.url}/api/projects/", headers={"Authorization": f"Token {token}"})
    assert revoked.status == 401
    assert page.js_errors == []


def test_workers_have_no_token_page_and_no_link(page, live_server):
    from tests.annotation.factories import make_worker_user

    make_worker_user("wendy", password=PASSWORD)
    log_in(page, "wendy", "/work/")
    assert page.locator("header >> text=API tokens").count() == 0
    response = page.goto("/projects/api-tokens/")
    assert response.status == 403


def test_the_api_documentation_page_renders_offline(page, researcher):
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    log_in(page, researcher.username, "/projects/")
    page.goto("/api/docs/")
    page.wait_for_selector("text=crowdbench researcher API")
    page.wait_for_selector("text=/api/rounds/{id}/publish/")
    assert all(url.startswith(page.url.split("/api/")[0]) for url in requests), requests
