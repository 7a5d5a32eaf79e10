"""The LLM settings block reads the environment, with the SDK's own variables as fallback.

The settings are read in this process under each environment (tests/settings_env.py)."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.settings_env import load_settings


def llm_settings(**env) -> list:
    loaded = load_settings(drop=("LLM_", "OPENAI_"), **env)
    return [loaded.LLM_BASE_URL, loaded.LLM_API_KEY, loaded.LLM_MODEL, loaded.LLM_TIMEOUT, loaded.LLM_MAX_CONCURRENCY,
            loaded.LLM_MAX_RETRIES, loaded.LLM_PRICES]


def test_openai_variables_are_the_fallback_and_llm_variables_win():
    fallback = llm_settings(OPENAI_BASE_URL="http://a/v1", OPENAI_API_KEY="sk-a")
    assert fallback[:2] == ["http://a/v1", "sk-a"]
    both = llm_settings(
        OPENAI_BASE_URL="http://a/v1", OPENAI_API_KEY="sk-a", LLM_BASE_URL="http://b/v1",
        LLM_API_KEY="sk-b", LLM_MODEL="gpt-4o", LLM_TIMEOUT="30", LLM_MAX_CONCURRENCY="16",
        LLM_MAX_RETRIES="2", LLM_PRICES='{"gpt-4o": {"input": 2.5, "output": 10}}',
    )
    assert both == [
        "http://b/v1", "sk-b", "gpt-4o", 30.0, 16, 2, {"gpt-4o": {"input": 2.5, "output": 10}},
    ]


@pytest.mark.parametrize(("env", "message"), [
    ({"LLM_MAX_CONCURRENCY": "many"}, "LLM_MAX_CONCURRENCY must be a number"),
    ({"LLM_PRICES": "{oops"}, "LLM_PRICES must be JSON"),
    ({"LLM_PRICES": '{"m": 1}'}, "LLM_PRICES must map model names"),
])
def test_bad_values_are_reported_by_name(env, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        llm_settings(**env)
