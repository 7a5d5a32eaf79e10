"""Safe defaults: DEBUG off unless asked for, no start with a weak key, `check --deploy` clean."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def manage(*args, **env):
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never does.
    dropped = {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {key: value for key, value in os.environ.items() if key not in dropped}
    base.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=base, capture_output=True,
                          text=True, timeout=120)


def settings_value(name: str, **env) -> str:
    result = manage("shell", "-c", f"from django.conf import settings; print(settings.{name})", **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_debug_is_off_unless_asked_for():
    assert settings_value("DEBUG", SECRET_KEY=STRONG_KEY) == "False"
    assert settings_value("DEBUG", DEBUG="1") == "True"


def test_sessions_are_cached_only_in_a_cache_every_process_shares():
    assert settings_value('CACHES["sessions"]["BACKEND"]', SECRET_KEY=STRONG_KEY, CACHE_URL="").endswith(".DummyCache")
    shared = settings_value('CACHES["sessions"]["BACKEND"]', SECRET_KEY=STRONG_KEY, CACHE_URL="redis://127.0.0.1:6379/1")
    assert shared == "crowdbench.cache.SessionRedisCache"
    assert settings_value('CACHES["sessions"]["MAX_TIMEOUT"]', SECRET_KEY=STRONG_KEY, CACHE_URL="redis://127.0.0.1:6379/1",
                          SESSION_CACHE_SECONDS="120") == "120"
    assert settings_value("SESSION_CACHE_ALIAS", SECRET_KEY=STRONG_KEY) == "sessions"


def serve(*, entry: str, **env):
    """Load the WSGI or ASGI application as a server process would."""
    dropped = {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE", "CROWDBENCH_SERVING"}
    base = {key: value for key, value in os.environ.items() if key not in dropped}
    base.update(env)
    return subprocess.run([sys.executable, "-c", f"import crowdbench.{entry}"], cwd=REPO, env=base,
                          capture_output=True, text=True, timeout=120)


WEAK_KEYS = [None, "crowdbench-development-key-not-for-production", "short-key-" * 4]


@pytest.mark.parametrize("key", WEAK_KEYS)
@pytest.mark.parametrize("start", ["wsgi", "asgi", "runserver", "check"])
def test_the_server_refuses_to_start_without_a_strong_key_when_debug_is_off(key, start):
    env = {"DEBUG": "0"} if key is None else {"DEBUG": "0", "SECRET_KEY": key}
    result = manage(start, "--noreload", **env) if start == "runserver" else (
        manage(start, **env) if start == "check" else serve(entry=start, **env))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY must be set to a random value of at least 50 characters" in result.stderr


def test_a_set_but_weak_key_is_refused_by_every_command():
    result = manage("makemigrations", "--check", "--dry-run", DEBUG="0", SECRET_KEY="short-key")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_commands_that_serve_nothing_run_without_a_key():
    # A throwaway key: nothing they sign outlives the process.
    result = manage("makemigrations", "--check", "--dry-run", DEBUG="0")
    assert result.returncode == 0, result.stderr
    assert "No changes detected" in result.stdout


def test_check_deploy_is_clean_with_the_documented_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout
    assert settings_value("SECURE_HSTS_SECONDS", **PRODUCTION) == str(365 * 24 * 3600)
    assert settings_value("SECURE_PROXY_SSL_HEADER", **PRODUCTION) == "('HTTP_X_FORWARDED_PROTO', 'https')"
    assert settings_value("CACHES['default']['BACKEND']", **PRODUCTION).endswith("RedisCache")


def test_check_deploy_flags_the_development_set_up():
    result = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="1")
    assert result.returncode != 0
    assert "security.W018" in result.stderr + result.stdout  # DEBUG on
