"""The project's LLM models page: the models, where each comes from, prices, budgets, the "test this
model" button; the settings named when nothing is configured; the key never in a page or a log. And
the step form names what to configure when no model is available, keeping the typed budget."""
from __future__ import annotations

import logging

import pytest
from django.urls import reverse

from fakes.openai_server import FakeOpenAIServer

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db
SECRET = "sk-test-secret-key-0123456789"


@pytest.fixture
def owner_client(client, researcher):
    client.login(username=researcher.username, password=PASSWORD)
    return client


@pytest.fixture
def served(settings):
    with FakeOpenAIServer(api_key=SECRET, models=("served-model", "cheap-model")) as server:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = server.base_url, SECRET, "served-model"
        settings.LLM_PRICES = {"served-model": {"input": 2, "output": 10}, "cheap-model": {"input": "0.15", "output": "0.6"}}
        settings.LLM_MAX_RETRIES = 0
        yield server


def test_configured_models_with_their_sources_and_prices_and_never_the_key(owner_client, project, served, caplog):
    caplog.set_level(logging.DEBUG)
    page = owner_client.get(reverse("cockpit:llm-models", args=[project.slug])).content.decode()
    assert "served-model" in page and "cheap-model" in page
    assert "<code>LLM_MODEL</code>" in page and "<code>LLM_PRICES</code>" in page and "<code>LLM_BASE_URL</code>" in page
    assert "0.15" in page and "set (LLM_API_KEY; not shown)" in page
    response = owner_client.post(reverse("cockpit:llm-test", args=[project.slug]), {"model": "cheap-model"})
    tested = response.content.decode()
    assert response.status_code == 200 and "cheap-model answered in" in tested
    assert served.completion_requests[-1].body["model"] == "cheap-model"
    assert "tokens/s (last 1 calls)" in tested and "no calls yet" in tested  # cheap-model, then served-model
    for text in (page, tested, caplog.text):
        assert SECRET not in text


def test_a_model_not_configured_is_refused_inline(owner_client, project, served):
    response = owner_client.post(reverse("cockpit:llm-test", args=[project.slug]), {"model": "gpt-unknown"})
    assert response.status_code == 400
    assert "is not one of the configured models" in response.content.decode()
    assert not served.completion_requests


def test_only_owners_test_models(client, project, collaborator, served):
    client.login(username=collaborator.username, password=PASSWORD)
    assert client.get(reverse("cockpit:llm-models", args=[project.slug])).status_code == 200
    assert client.post(reverse("cockpit:llm-test", args=[project.slug]), {"model": "served-model"}).status_code == 403
    assert not served.completion_requests


def test_nothing_configured_names_the_settings(owner_client, project, settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, False
    page = owner_client.get(reverse("cockpit:llm-models", args=[project.slug])).content.decode()
    assert "No LLM server is configured. Set LLM_BASE_URL" in page and "LLM_EMBEDDED=0" in page


def test_the_embedded_model_is_listed_honestly(owner_client, project, settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, True
    page = owner_client.get(reverse("cockpit:llm-models", args=[project.slug])).content.decode()
    assert "SmolLM2-135M-Instruct" in page and "a small local model: for trying the pipeline, not for results" in page
    assert "text only" in page and "embedded" in page


def test_the_step_form_names_what_to_configure_and_keeps_the_budget(owner_client, project, settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_PRICES, settings.LLM_EMBEDDED = {}, False
    board = owner_client.get(reverse("cockpit:project", args=[project.slug])).content.decode()
    assert "No LLM model is available: No LLM server is configured. Set LLM_BASE_URL" in board
    response = owner_client.post(reverse("cockpit:start-step", args=[project.slug, "generate_references"]),
                                 {"generate_references-run-budget_usd": "2.75"})
    page = response.content.decode()
    assert response.status_code == 400
    assert "This field is required." not in page
    assert page.count("No LLM model is available: No LLM server is configured. Set LLM_BASE_URL") >= 2
    assert 'value="2.75"' in page
