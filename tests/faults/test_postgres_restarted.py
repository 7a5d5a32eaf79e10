"""PostgreSQL restarted in the middle of a round, under a running gunicorn: requests during the outage get
a clean 503 (never a 500), and afterwards the same gunicorn processes fetch and submit again
(persistent connections are checked before reuse, CONN_HEALTH_CHECKS). Every acknowledged submission
is stored once.

The database is a private cluster started by the test (own data folder, port and socket folder), so
restarting it disturbs nothing else."""
from __future__ import annotations

import json

import httpx
import pytest

from harness.crowd import Crowd, intact
from harness.processes import PrivatePostgres, create_database, harness_command, server_environment, wait_for

from .conftest import assert_no_server_errors

pytestmark = pytest.mark.postgres

ITEMS, OVERLAP, WORKERS = 30, 2, 8


@pytest.fixture
def private_postgres():
    cluster = PrivatePostgres()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


def test_gunicorn_rides_out_a_postgres_restart(private_postgres, gunicorn, static_root):
    url = create_database(private_postgres.admin_url, "crowdbench")
    env = server_environment(database_url=url, static_root=static_root)
    built = harness_command(env, "build-round", "--migrate", "--items", str(ITEMS), "--overlap", str(OVERLAP),
                            "--workers", str(WORKERS))
    server = gunicorn(database_url=url, WEB_CONCURRENCY="1")
    processes = server.workers()
    assert len(processes) == 1

    crowd = Crowd(server.base_url, built["usernames"], built["round"]).start()
    crowd.wait_for_acknowledged(10)
    private_postgres.stop("fast")  # ends every connection, as a restart or a failover does
    try:
        health = httpx.get(f"{server.base_url}/health/", timeout=30)
        assert (health.status_code, health.json()) == (503, {"status": "unavailable", "database": "unavailable",
                                                             "cache": "ok"})
        # The workers' own requests meet the outage too, and are answered 503, not 500.
        wait_for(lambda: any(key.endswith(" 503") for key in crowd.report.retried), "a simulated worker answered 503 during the outage", seconds=60)
    finally:
        private_postgres.start()
    report = crowd.join()

    assert_no_server_errors(report)
    assert server.workers() == processes, "gunicorn's processes were replaced"
    assert "Internal Server Error" not in server.log()
    integrity = harness_command(env, "check-integrity", "--round", str(built["round"]), "--overlap", str(OVERLAP),
                                "--items", str(ITEMS), stdin=json.dumps(report.acknowledged))
    assert intact(integrity), integrity
