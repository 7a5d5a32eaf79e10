"""The LLM settings block reads the environment, with the SDK's own variables as fallback."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .. import conftest

PRINT_SETTINGS = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.LLM_BASE_URL, s.LLM_API_KEY, s.LLM_MODEL, s.LLM_TIMEOUT, s.LLM_MAX_CONCURRENCY, "
    "s.LLM_MAX_RETRIES, s.LLM_PRICES]))"
)


def settings_with(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))}
    clean.update(env, DJANGO_SETTINGS_MODULE="crowdbench.settings")
    return subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS], cwd=conftest.REPO_ROOT, env=clean, capture_output=True, text=True
    )


def test_openai_variables_are_the_fallback_and_llm_variables_win():
    fallback = settings_with({"OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "sk-a"})
    assert json.loads(fallback.stdout)[:2] == ["http://a/v1", "sk-a"]
    both = settings_with(
        {
            "OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "sk-a", "LLM_BASE_URL": "http://b/v1",
            "LLM_API_KEY": "sk-b", "LLM_MODEL": "gpt-4o", "LLM_TIMEOUT": "30", "LLM_MAX_CONCURRENCY": "16",
            "LLM_MAX_RETRIES": "2", "LLM_PRICES": '{"gpt-4o": {"input": 2.5, "output": 10}}',
        }
    )
    assert json.loads(both.stdout) == [
        "http://b/v1", "sk-b", "gpt-4o", 30.0, 16, 2, {"gpt-4o": {"input": 2.5, "output": 10}},
    ]


def test_bad_values_are_reported_by_name():
    assert "LLM_MAX_CONCURRENCY must be a number" in settings_with({"LLM_MAX_CONCURRENCY": "many"}).stderr
    assert "LLM_PRICES must be JSON" in settings_with({"LLM_PRICES": "{oops"}).stderr
    assert "LLM_PRICES must map model names" in settings_with({"LLM_PRICES": '{"m": 1}'}).stderr
