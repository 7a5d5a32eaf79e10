from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from llm.config import LLMNotConfigured


def test_llm_check_lists_models_and_never_prints_the_key(settings, fake_server):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_server.base_url, "test-key", "other"
    out = StringIO()
    call_command("llm_check", stdout=out)
    text = out.getvalue()
    assert "server answers; models: fake-model" in text
    assert "LLM_MODEL 'other' is not among them" in text
    assert "test-key" not in text and "API key       set" in text
    assert fake_server.requests[-1].path == "/v1/models"


def test_llm_check_reports_a_wrong_key(settings, fake_server):
    settings.LLM_BASE_URL, settings.LLM_API_KEY = fake_server.base_url, "wrong"
    with pytest.raises(CommandError, match="did not answer"):
        call_command("llm_check", stdout=StringIO())


def test_llm_check_keyless_server(settings, fake_server):
    fake_server.api_key = None
    settings.LLM_BASE_URL, settings.LLM_API_KEY = fake_server.base_url, ""
    call_command("llm_check", stdout=StringIO())
    assert "Authorization" not in fake_server.requests[-1].headers


def test_llm_check_without_configuration(settings):
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", ""
    with pytest.raises(LLMNotConfigured, match="LLM_BASE_URL"):
        call_command("llm_check", stdout=StringIO())
