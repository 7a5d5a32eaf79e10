"""Fault tests: a live crowdbench (gunicorn with ``gunicorn.conf.py``, ``DEBUG`` off, Celery workers) on
PostgreSQL, with one of its services killed or restarted in the middle of the work.

Each test runs its own servers on free ports (``harness.processes``) and ends them; the shared
PostgreSQL and Redis are never stopped. Waiting is polling with generous bounds, never a fixed sleep.
"""
from __future__ import annotations

import signal
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import global_settings
from django.db import connection

from harness.processes import children, free_port, manage, server_environment, start_gunicorn, stop_group, wait_until_up

# Processes × threads of the servers under test: enough for requests in flight on every process.
PROCESSES = 2
THREADS = 4


@pytest.fixture(scope="session")
def static_root(tmp_path_factory) -> str:
    """Collected static files (DEBUG off serves the hashed ones), gathered once per test run."""
    root = tmp_path_factory.mktemp("static")
    manage(server_environment(database_url="sqlite:///:memory:", static_root=str(root)),
           "collectstatic", "--noinput", "-v", "0")
    return str(root)


@pytest.fixture
def real_password_hasher(settings):
    """Users made here log in on a server with the production hashers (the suite's MD5 is unknown there)."""
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS


@pytest.fixture
def test_database_url(transactional_db, real_password_hasher) -> str:
    """The URL of this test's PostgreSQL database, for servers in other processes; what the test
    writes through the ORM is committed, so they see it."""
    if connection.vendor != "postgresql":
        pytest.fail(f"fault tests need PostgreSQL, the database is {connection.vendor}: run them with "
                    "DATABASE_URL=postgres://... (make test does)")
    db = connection.settings_dict
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    return f"postgres://{quote(db['USER'] or '', safe='')}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Gunicorn:
    def __init__(self, env: dict, log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process = start_gunicorn(env, self.port, log=self._log)
        wait_until_up(self.base_url, self.process)

    def workers(self) -> list[int]:
        return children(self.process.pid)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        # Quick shutdown: nothing is in flight any more, and a graceful one waits out idle connections.
        stop_group(self.process, signal.SIGQUIT)
        self._log.close()


@pytest.fixture
def gunicorn(tmp_path, static_root):
    """``gunicorn(database_url=..., **environment)``: a started server, stopped after the test."""
    servers = []

    def start(*, database_url: str, **extra: str) -> Gunicorn:
        env = server_environment(database_url=database_url, static_root=static_root,
                                 **{"WEB_CONCURRENCY": str(PROCESSES), "GUNICORN_THREADS": str(THREADS), **extra})
        server = Gunicorn(env, tmp_path / f"gunicorn-{len(servers)}.log")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def assert_no_server_errors(report) -> None:
    """Every simulated worker finished, and no answer was a refusal or a 500 (only waited-out ones)."""
    assert not report.failures, report.failures[:5]
    assert not report.refused, dict(report.refused)
