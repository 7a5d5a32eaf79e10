from io import StringIO

import pytest
from django.core.management import CommandError, call_command



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


def test_llm_check_without_configuration_says_what_to_set(settings):
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", ""
    with pytest.raises(CommandError, match="The LLM is not configured: No LLM server is configured. Set LLM_BASE_URL"):
        call_command("llm_check", stdout=StringIO())


def test_llm_check_without_configuration_prints_no_traceback(tmp_path):
    """Run as a user would: one clean line on stderr, exit status 1."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("LLM_", "OPENAI_"))}
    environment["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    environment["LLM_EMBEDDED"] = "0"  # else the embedded model answers (next test)
    finished = subprocess.run([sys.executable, "manage.py", "llm_check"], cwd=root, env=environment,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 1
    assert "Traceback" not in finished.stderr
    assert "CommandError: The LLM is not configured" in finished.stderr
    assert "LLM_BASE_URL" in finished.stderr


def test_llm_check_with_nothing_configured_lists_the_embedded_model(settings):
    settings.LLM_BASE_URL = settings.LLM_API_KEY = settings.LLM_MODEL = ""
    settings.LLM_EMBEDDED = True
    out = StringIO()
    call_command("llm_check", stdout=out)
    text = out.getvalue()
    assert "embedded model SmolLM2-135M-Instruct (a small local model: for trying the pipeline, not for results)" in text
    assert "server answers; models: SmolLM2-135M-Instruct" in text
