"""The LLM models page in chromium: with nothing configured the embedded model is listed as what it
is, and its "test this model" button shows its reply and latency; with a server configured, its
models and the settings naming them, never the key."""
from __future__ import annotations

import pytest

from fakes.openai_server import FakeOpenAIServer
from llm import embedded

from .conftest import log_in_researcher as log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("smollm2")]
SECRET = "sk-browser-secret-0123456789"


def test_the_embedded_model_answers_the_test_button(page, researcher, project, settings, live_server):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED, settings.LLM_EMBEDDED_MAX_TOKENS = {}, True, 24
    log_in(page, researcher.username, f"/projects/{project.slug}/")
    page.click("nav.project-nav >> text=LLM models")
    page.wait_for_url(f"**/projects/{project.slug}/llm/")
    row = page.locator("table.llm-models tbody tr")
    assert row.count() == 1
    assert embedded.EMBEDDED_MODEL in row.inner_text()
    assert "a small local model: for trying the pipeline, not for results" in row.inner_text()
    # The first answer waits for the model to load (about 20 s on a CPU).
    with page.expect_navigation(timeout=180_000):
        page.click(f"button[aria-label='Test {embedded.EMBEDDED_MODEL}']", no_wait_after=True)
    result = page.locator("#llm-test-result")
    result.wait_for(timeout=180_000)
    assert f"{embedded.EMBEDDED_MODEL} answered in" in result.inner_text()
    assert result.locator("blockquote").inner_text().strip()
    assert page.js_errors == []


def test_a_configured_server_replaces_it_and_the_key_stays_hidden(page, researcher, project, settings, live_server):
    with FakeOpenAIServer(api_key=SECRET, models=("served-model",)) as server:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = server.base_url, SECRET, "served-model"
        settings.LLM_PRICES, settings.LLM_EMBEDDED, settings.LLM_MAX_RETRIES = (
            {"served-model": {"input": 2, "output": 10}}, True, 0)
        log_in(page, researcher.username, f"/projects/{project.slug}/llm/")
        table = page.locator("table.llm-models").inner_text()
        assert "served-model" in table and "LLM_MODEL" in table and embedded.EMBEDDED_MODEL not in table
        page.click("button[aria-label='Test served-model']")
        page.locator("#llm-test-result").wait_for()
        assert "served-model answered in" in page.locator("#llm-test-result").inner_text()
        assert SECRET not in page.content()
        assert page.js_errors == []


def test_nothing_configured_and_the_embedded_model_off_names_the_settings(page, researcher, project, settings,
                                                                           live_server):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, False
    log_in(page, researcher.username, f"/projects/{project.slug}/llm/")
    problem = page.locator("#llm-problem").inner_text()
    assert "Set LLM_BASE_URL" in problem and "LLM_API_KEY" in problem and "LLM_EMBEDDED=0" in problem
    assert page.locator("text=No model is available.").is_visible()
