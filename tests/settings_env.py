"""The settings module read again in this process under a given environment and command line.

What a process started with that environment would get, without starting one (a Django start costs
seconds); the tests that are about process start-up itself (the WSGI/ASGI entry points, manage.py's
message) still start one.
"""
from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from types import SimpleNamespace
from unittest import mock

SETTINGS_FILE = importlib.util.find_spec("crowdbench.settings").origin
# Set for this test process (pytest.ini, the browser tests), never by a deployment: a test gives them
# explicitly when it wants them.
TEST_PROCESS_ONLY = ("DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE", "CROWDBENCH_SERVING")


def load_settings(*argv: str, drop: tuple[str, ...] = (), **env: str) -> SimpleNamespace:
    """The settings as ``manage.py *argv`` would read them with ``env`` added to this process's
    environment (variables starting with a prefix in ``drop`` removed). Raises what the settings
    raise, ImproperlyConfigured included."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in TEST_PROCESS_ONLY and not key.startswith(drop)}
    environment.update(env)
    with mock.patch.dict(os.environ, environment, clear=True), \
            mock.patch.object(sys, "argv", ["manage.py", *argv]):
        return SimpleNamespace(**runpy.run_path(SETTINGS_FILE))
