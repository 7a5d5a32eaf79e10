"""Redis (cache: sessions, rate limits; Celery broker) killed in the middle of a round: workers already
logged in keep fetching and submitting, new ones log in, nothing is lost, and the cache is back once
Redis is."""
from __future__ import annotations

import math
import time

import httpx
import pytest

from crowdbench.cache import WARNING_INTERVAL
from harness.crowd import Crowd, build_round, check_integrity, intact
from harness.processes import wait_for

from .conftest import PROCESSES, assert_no_server_errors

pytestmark = pytest.mark.postgres

# Each item needs more answers than the early half of the crowd can give (one per worker), so the
# workers who log in during the outage always have work left, however fast the early half is.
ITEMS, OVERLAP, WORKERS = 20, 5, 8
EARLY = WORKERS // 2
assert OVERLAP > EARLY


def health(server) -> httpx.Response:
    return httpx.get(f"{server.base_url}/health/", timeout=30)


def test_workers_log_in_fetch_and_submit_while_redis_is_down(test_database_url, gunicorn, redis_server):
    round, usernames = build_round(items=ITEMS, overlap=OVERLAP, workers=WORKERS)
    # Rate limits stay on (their counters live in Redis), with room for a fast simulated crowd.
    server = gunicorn(database_url=test_database_url, CACHE_URL=redis_server.url(1),
                      CELERY_BROKER_URL=redis_server.url(0), RATE_LIMITS_ENABLED="1",
                      RATE_LIMIT_TASKS_PER_WORKER="10000/m", RATE_LIMIT_SUBMISSIONS_PER_WORKER="10000/m",
                      RATE_LIMIT_LOGIN_PER_ADDRESS="10000/m")
    assert health(server).json()["cache"] == "ok"

    early = Crowd(server.base_url, usernames[:EARLY], round.pk).start()
    early.wait_for_acknowledged(10)
    redis_server.kill()
    killed_at = time.monotonic()
    down = health(server)
    assert (down.status_code, down.json()) == (503, {"status": "unavailable", "database": "ok",
                                                     "cache": "unavailable"})
    # These log in, fetch and submit with Redis gone from the start.
    late = Crowd(server.base_url, usernames[EARLY:], round.pk).start()
    reports = [early.join(), late.join()]
    outage = time.monotonic() - killed_at

    for report in reports:
        assert_no_server_errors(report)
    assert not any(report.retried for report in reports), [dict(report.retried) for report in reports]
    acknowledged = reports[0].acknowledged + reports[1].acknowledged
    # Every item still needed an answer from a worker who logged in with Redis down.
    assert len(reports[1].acknowledged) >= ITEMS
    integrity = check_integrity(round_id=round.pk, acknowledged=acknowledged, overlap=OVERLAP, items=ITEMS)
    assert intact(integrity), integrity
    # The outage is logged, though not once per request: at most once a minute per process.
    warnings = server.log().count("the cache (Redis) does not answer")
    assert 1 <= warnings <= PROCESSES * (1 + math.ceil(outage / WARNING_INTERVAL)), server.log()[-3000:]

    redis_server.start()  # same port: the servers reconnect by themselves
    wait_for(lambda: health(server).status_code == 200, "the cache answering again after Redis restarted",
             seconds=60, pause=0.2)
