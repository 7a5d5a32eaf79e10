"""What a request gets while a service is down: the cache degrades to a miss, a database error is a 503.

The live versions (Redis killed, PostgreSQL restarted under gunicorn) are in tests/faults/.
"""
from __future__ import annotations

import json
import logging

import pytest
from django.db import OperationalError
from django.test import RequestFactory

from crowdbench import cache as resilient
from crowdbench.cache import ResilientRedisCache
from crowdbench.views import server_error
from harness.processes import free_port
from tests.redis_commands import commands_sent


@pytest.fixture
def dead_redis_cache(monkeypatch):
    monkeypatch.setattr(resilient, "_last_warning", 0.0)
    # Nothing listens on a fresh free port: every call is refused at once.
    return ResilientRedisCache(f"redis://127.0.0.1:{free_port()}/0",
                               {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}})


def test_a_cache_without_redis_misses_drops_writes_and_warns_once(dead_redis_cache, caplog):
    cache = dead_redis_cache
    with caplog.at_level(logging.WARNING, logger="crowdbench.cache"):
        assert cache.get("k") is None and cache.get("k", "fallback") == "fallback"
        assert cache.add("k", 1, 60) is False
        assert cache.set("k", 1) is None and cache.get_many(["k", "j"]) == {}
        assert cache.get_or_set("k", 5) == 5
        with pytest.raises(ValueError):  # as for a missing key
            cache.incr("k")
        assert cache.count_in_windows([("k", 60)], increment=True) is None  # the rate limits then fail open
        cache.delete("k")
        cache.delete_many(["k"])
    warnings = [record for record in caplog.records if "does not answer" in record.getMessage()]
    assert len(warnings) == 1 and "127.0.0.1" not in warnings[0].getMessage()


def test_a_rate_limited_request_passes_while_the_cache_is_down(dead_redis_cache, settings, monkeypatch):
    from djangokit.rate_limits import Counter, count_requests

    monkeypatch.setattr("djangokit.rate_limits.caches", {"default": dead_redis_cache})
    counters = [Counter(name="g:address", who="192.0.2.1", rate="1/m"), Counter(name="g:worker", who="u", rate="1/m")]
    assert settings.RATE_LIMITS_FAIL_OPEN is True
    assert count_requests(counters) is None
    settings.RATE_LIMITS_FAIL_OPEN = False
    usages = count_requests(counters)
    assert [usage.over for usage in usages] == [True, True] and usages[0].seconds_left == 1


@pytest.mark.parametrize("path, json_body", [("/api/work/rounds/1/next/", True), ("/work/", False)])
def test_an_unreachable_database_is_a_503_with_retry_after(path, json_body):
    request = RequestFactory().post(path)
    try:
        raise OperationalError("connection refused")
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert ("try again" in json.loads(response.content)["detail"]) if json_body else (b"try again" in response.content)
    assert b"connection refused" not in response.content


def test_any_other_error_stays_a_500():
    request = RequestFactory().get("/work/")
    try:
        raise KeyError("bug")
    except KeyError:
        response = server_error(request)
    assert response.status_code == 500 and b"bug" not in response.content


def test_the_redis_cache_reuses_one_client_per_connection_pool():
    """Django's client builds a redis.Redis per call; crowdbench's keeps one per pool, and it works."""
    cache = ResilientRedisCache("redis://127.0.0.1:6379/14", {})
    client = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=False) is client
    assert client.connection_pool is cache._cache._get_connection_pool(True)
    cache.delete_many(["reused-client", "reused-client-n"])
    cache.set("reused-client", {"a": 1}, 30)
    assert cache.get("reused-client") == {"a": 1}
    assert cache.add("reused-client-n", 1, 30) and cache.incr("reused-client-n") == 2
    cache.delete_many(["reused-client", "reused-client-n"])
    assert cache.get("reused-client") is None


def test_the_redis_cache_counts_in_one_round_trip_and_never_creates_a_missing_count(redis_server):
    """``incr`` is one script call; like Django's it refuses a
    missing key, and it leaves no count behind for it (two separate calls could, without an expiry)."""
    cache = ResilientRedisCache(redis_server.url(0), {})
    client = cache._cache.get_client(write=True)
    with commands_sent(client) as sent:
        with pytest.raises(ValueError):
            cache.incr("missing-count")
        assert client.exists(cache.make_and_validate_key("missing-count")) == 0
        assert cache.add("a-count", 1, 30)
        sent.clear()
        assert cache.incr("a-count") == 2 and cache.incr("a-count", 5) == 7
    assert sent == ["EVALSHA", "EVALSHA"]
    assert client.ttl(cache.make_and_validate_key("a-count")) > 0
