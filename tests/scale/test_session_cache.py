"""The sessions' Redis cache keeps an entry at most ``MAX_TIMEOUT`` seconds, so a write Redis missed
while unreachable (a logout during a partition) leaves a stale session behind for that long at most."""
from __future__ import annotations

import pytest
import redis

from crowdbench.cache import SessionRedisCache

TWO_WEEKS = 14 * 24 * 3600


@pytest.fixture
def session_cache(redis_server):
    cache = SessionRedisCache(redis_server.url(2), {"MAX_TIMEOUT": 60})
    yield cache
    cache.clear()


def seconds_left(redis_server, cache, key) -> int:
    return redis.Redis.from_url(redis_server.url(2)).ttl(cache.make_key(key))


def test_every_entry_expires_within_the_bound(redis_server, session_cache):
    session_cache.set("long", 1, timeout=TWO_WEEKS)
    session_cache.set("forever", 1, timeout=None)
    session_cache.set("short", 1, timeout=10)
    assert 0 < seconds_left(redis_server, session_cache, "long") <= 60
    assert 0 < seconds_left(redis_server, session_cache, "forever") <= 60
    assert 0 < seconds_left(redis_server, session_cache, "short") <= 10
    session_cache.set("gone", 1, timeout=0)  # a non-positive timeout still deletes
    assert session_cache.get("gone") is None


@pytest.mark.django_db
def test_a_session_missed_by_a_logout_while_redis_was_unreachable_expires_within_the_bound(
        redis_server, session_cache, settings, monkeypatch):
    from django.contrib.sessions.models import Session
    from django.core.cache import caches

    settings.CACHES = {**settings.CACHES, "sessions": {
        "BACKEND": "crowdbench.cache.SessionRedisCache", "LOCATION": redis_server.url(2), "MAX_TIMEOUT": 60}}
    from crowdbench.sessions import SessionStore

    store = SessionStore()
    store["_auth_user_id"] = "7"
    store.save()
    key = store.cache_key
    # The logout's cache delete does not reach Redis; the database row goes.
    monkeypatch.setattr(type(caches["sessions"]), "delete", lambda self, *args, **kwargs: False)
    store.flush()
    assert not Session.objects.exists()
    left = seconds_left(redis_server, caches["sessions"], key)
    assert 0 < left <= 60, left
