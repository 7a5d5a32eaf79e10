"""Safe defaults: DEBUG off unless asked for, no start with a weak key, `check --deploy` clean.

The settings are read in this process under each environment (tests/settings_env.py); only the
start-up of the entry points (WSGI, ASGI, manage.py runserver and check) runs in a new process, since
what is tested there is the process's start: the entry point marks itself as serving before the
settings load, and manage.py turns the refusal into a message and an exit status.
"""
from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test.utils import override_settings

from tests.settings_env import TEST_PROCESS_ONLY, load_settings

REPO = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3Y-" + "x7Qp9" * 12  # 64 characters
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "crowdbench.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://crowdbench.example.org",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
    "CACHE_URL": "redis://127.0.0.1:6379/1",
}
WEAK_KEY_REFUSED = "SECRET_KEY must be set to a random value of at least 50 characters"


def test_debug_is_off_unless_asked_for():
    assert load_settings("shell", SECRET_KEY=STRONG_KEY).DEBUG is False
    assert load_settings("shell", DEBUG="1").DEBUG is True


def test_sessions_are_cached_only_in_a_cache_every_process_shares():
    assert load_settings(SECRET_KEY=STRONG_KEY, CACHE_URL="").CACHES["sessions"]["BACKEND"].endswith(".DummyCache")
    shared = load_settings(SECRET_KEY=STRONG_KEY, CACHE_URL="redis://127.0.0.1:6379/1")
    assert shared.CACHES["sessions"]["BACKEND"] == "crowdbench.cache.SessionRedisCache"
    seconds = load_settings(SECRET_KEY=STRONG_KEY, CACHE_URL="redis://127.0.0.1:6379/1", SESSION_CACHE_SECONDS="120")
    assert seconds.CACHES["sessions"]["MAX_TIMEOUT"] == 120
    assert load_settings(SECRET_KEY=STRONG_KEY).SESSION_CACHE_ALIAS == "sessions"


WEAK_KEYS = [None, "crowdbench-development-key-not-for-production", "short-key-" * 4]
# How each way of serving tells the settings that it serves: the WSGI and ASGI modules set
# CROWDBENCH_SERVING before loading them; runserver and check are read from the command line.
SERVING = {"wsgi": ((), {"CROWDBENCH_SERVING": "1"}), "asgi": ((), {"CROWDBENCH_SERVING": "1"}),
           "runserver": (("runserver", "--noreload"), {}), "check": (("check",), {})}


@pytest.mark.parametrize("key", WEAK_KEYS)
@pytest.mark.parametrize("start", SERVING)
def test_the_server_refuses_to_start_without_a_strong_key_when_debug_is_off(key, start):
    argv, serving = SERVING[start]
    env = {"DEBUG": "0", **serving} if key is None else {"DEBUG": "0", "SECRET_KEY": key, **serving}
    with pytest.raises(ImproperlyConfigured, match=WEAK_KEY_REFUSED):
        load_settings(*argv, **env)


def start(entry: str, **env) -> subprocess.CompletedProcess:
    """Start the WSGI or ASGI application as a server process would, or a manage.py command."""
    base = {key: value for key, value in os.environ.items() if key not in TEST_PROCESS_ONLY}
    base.update(env)
    command = ["manage.py", entry, "--noreload"] if entry == "runserver" else (
        ["manage.py", entry] if entry == "check" else ["-c", f"import crowdbench.{entry}"])
    return subprocess.run([sys.executable, *command], cwd=REPO, env=base, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("entry", SERVING)
def test_each_entry_point_stops_at_start_up_without_a_key(entry):
    result = start(entry, DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert WEAK_KEY_REFUSED in result.stderr


def test_a_set_but_weak_key_is_refused_by_every_command():
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY must be set"):
        load_settings("makemigrations", "--check", "--dry-run", DEBUG="0", SECRET_KEY="short-key")


def test_commands_that_serve_nothing_run_without_a_key():
    # A throwaway key: nothing they sign outlives the process.
    first = load_settings("makemigrations", "--check", "--dry-run", DEBUG="0")
    second = load_settings("migrate", DEBUG="0")
    assert len(first.SECRET_KEY) >= 50 and first.SECRET_KEY != first.DEVELOPMENT_SECRET_KEY
    assert second.SECRET_KEY != first.SECRET_KEY


def deploy_check(**env) -> str:
    """``manage.py check --deploy --fail-level WARNING`` with the settings ``env`` gives, run on
    this process's apps and database; raises SystemCheckError naming the problems."""
    loaded = load_settings("check", "--deploy", **env)
    # The apps and databases are this process's (the same modules; the database is the test one).
    values = {name: value for name, value in vars(loaded).items()
              if name.isupper() and name not in {"INSTALLED_APPS", "DATABASES"}}
    out = StringIO()
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process (a check refuses it); a deployment never does.
    with override_settings(**values), mock.patch.dict(os.environ):
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        call_command("check", "--deploy", "--fail-level", "WARNING", stdout=out, stderr=out)
    return out.getvalue()


def test_check_deploy_is_clean_with_the_documented_production_settings():
    assert "no issues" in deploy_check(**PRODUCTION)
    production = load_settings(**PRODUCTION)
    assert production.SECURE_HSTS_SECONDS == 365 * 24 * 3600
    assert production.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert production.CACHES["default"]["BACKEND"].endswith("RedisCache")


def test_check_deploy_flags_the_development_set_up():
    with pytest.raises(SystemCheckError, match=r"security\.W018"):  # DEBUG on
        deploy_check(DEBUG="1")
