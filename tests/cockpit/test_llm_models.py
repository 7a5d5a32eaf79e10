"""The project's LLM models page: the models, where each comes from, prices, budgets, the "test this
model" button; the settings named when nothing is configured; the key never in a page or a log. And
the step form names what to configure when no model is available, keeping the typed budget."""
from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from django.urls import reverse

from fakes.openai_server import FakeOpenAIServer
from llm import embedded
from llm.models import LLMCall
from stepruns.models import StepRun
from tests.llm.fake_embedded import fake_embedded_model  # noqa: F401  (fixture)

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
    assert "tokens/s (the last call)" in tested and "no calls yet" in tested  # cheap-model, then served-model
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


def test_speed_is_the_median_of_recent_calls_and_says_so(owner_client, project, fake_embedded_model):
    # The first call also loaded the model (a step run in a new process); the three others were warm.
    for number, latency in enumerate([43.0, 3.7, 3.7, 3.7]):
        LLMCall.objects.create(request_hash=f"{number:064x}", endpoint=LLMCall.Endpoint.CHAT,
                               model=embedded.EMBEDDED_MODEL, request={}, status=LLMCall.Status.OK,
                               latency_seconds=latency, completion_tokens=24)
    page = owner_client.get(reverse("cockpit:llm-models", args=[project.slug])).content.decode()
    assert "3.7 s per call" in page and "(median of the last 4 calls)" in page  # not the mean, 13.5 s
    assert "Speed lately is the median of the model's last answered calls" in page
    # Testing the model loads it first, timed apart: the test's own call is a warm one.
    tested = owner_client.post(reverse("cockpit:llm-test", args=[project.slug]), {"model": embedded.EMBEDDED_MODEL})
    text = tested.content.decode()
    assert tested.status_code == 200 and "Loading the embedded model took" in text
    assert f"{embedded.EMBEDDED_MODEL} answered in" in text and "(median of the last 5 calls)" in text
    assert "3.7 s per call" in text


def test_budgets_and_spending_read_as_money(owner_client, project, researcher, served):
    for budget, cost in ((Decimal("0.100000"), Decimal("0.00052200")), (None, Decimal("1.50000000"))):
        StepRun.objects.create(project=project, kind="generate_references", model="served-model", budget_usd=budget,
                               cost_usd=cost, status=StepRun.Status.SUCCEEDED, created_by=researcher)
    page = owner_client.get(reverse("cockpit:llm-models", args=[project.slug])).content.decode()
    assert "0.100000" not in page and "0.00052200" not in page and "1.500000" not in page
    assert "<td>0.1</td>" in page and "<td>0.000522</td>" in page and "<td>no cap</td>" in page
    assert "<td>1.5</td>" in page and "<td>1.500522</td>" in page  # each run's cost, and the model's spending
