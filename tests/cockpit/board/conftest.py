"""Board tests: the local fake OpenAI server answering as a pairwise judge, and project data."""
from __future__ import annotations

import pytest

from datasets_app.models import Instance
from fakes.openai_server import FakeOpenAIServer, judge_responder
from tests.annotation.factories import make_family, make_instance, make_outputs, make_reference

MODEL = "fake-model"
PRICES = {MODEL: {"input": 2, "output": 10}, "cheap-model": {"input": "0.15", "output": "0.6"}}


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(responder=judge_responder, models=(MODEL, "cheap-model")) as server:
        yield server


@pytest.fixture
def llm_settings(settings, fake_server):
    """Every LLM call made through settings goes to the fake server, as a researcher's set-up would."""
    settings.LLM_BASE_URL = fake_server.base_url
    settings.LLM_API_KEY = ""
    settings.LLM_MODEL = MODEL
    settings.LLM_PRICES = PRICES
    settings.LLM_MAX_RETRIES = 0
    return settings


def project_instance(project, *, status=Instance.Status.AWAITING_VERIFICATION, reason="", instruction=None):
    """An instance of ``project`` (one image, a current instruction-conditioned caption) in ``status``."""
    family = make_family(project=project)
    instance = make_instance(family=family, instruction=instruction)
    # Test set-up: place the instance directly in the stage under test.
    Instance.objects.filter(pk=instance.pk).update(status=status, discard_reason=reason)
    instance.refresh_from_db()
    return instance


def judged_instance(project, *, models=("model-x", "model-y"), reference="The verified reference."):
    instance = project_instance(project, status=Instance.Status.VERIFIED)
    make_outputs(instance=instance, models=models)
    make_reference(instance=instance, text=reference)
    return instance
