"""Django's Redis cache, degraded to a miss while Redis does not answer.

Nothing in the cache is the only copy of anything (sessions are written through to the database,
rate-limit counters may restart), so a Redis outage must not stop workers from logging in, fetching
and submitting. Django's ``RedisCache`` raises on a dead server, and no maintained backend with an
option to ignore errors (django-redis's ``IGNORE_EXCEPTIONS``) is a dependency, hence this subclass:
reads miss, writes are dropped, ``add`` reports "not added", ``incr`` raises ``ValueError`` as for
a missing key, and the rate limits' counters come back unknown (``djangokit.rate_limits`` then fails
open, ``RATE_LIMITS_FAIL_OPEN``). A warning is logged at
most once per ``WARNING_INTERVAL`` seconds per process, not once per request. Redis is asked again on
every call, so the cache is back as soon as Redis is.
"""
from __future__ import annotations

import functools
import logging
import threading
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

WARNING_INTERVAL = 60.0
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, OSError)

_last_warning = 0.0
_warning_lock = threading.Lock()


def _warn(operation: str, error: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    with _warning_lock:
        if _last_warning and now - _last_warning < WARNING_INTERVAL:
            return
        _last_warning = now
    # The error's text may name the host; the type is enough to tell an outage from a timeout.
    logger.warning("the cache (Redis) does not answer (%s on %s); serving without it, warning again in %d s "
                   "at the earliest", type(error).__name__, operation, WARNING_INTERVAL)


def _degraded(fallback):
    """Run the operation; while Redis does not answer, log (rarely) and return ``fallback(*args)``."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except UNAVAILABLE as error:
                _warn(method.__name__, error)
                return fallback(*args, **kwargs)
        return guarded
    return wrap


def _missing_key(key, *args, **kwargs):
    raise ValueError(f"Key {key!r} not found (the cache is unavailable)")


class ReusedClientRedisCacheClient(RedisCacheClient):
    """Django's Redis cache client with one ``redis.Redis`` per connection pool. Django builds a new one
    (its option and callback tables) for every cache call, which the load bench's profile showed at
    about 6 % of a worker's submission; a ``redis.Redis`` is only a thread-safe handle on its pool."""

    def __init__(self, servers, **options):
        super().__init__(servers, **options)
        self._clients = {}
        self._scripts = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client

    def incr(self, key, delta):
        """Add ``delta`` to a stored count in one round trip; ``ValueError`` when the key is missing.
        Django's client asks ``EXISTS`` and then ``INCRBY``: two round trips, and a key that expires
        between them comes back as a count that never expires."""
        value = self._script(_INCR_EXISTING)(keys=[key], args=[delta])
        if value is None:
            raise ValueError(f"Key {key!r} not found.")
        return value

    def count_in_windows(self, keys_and_seconds, *, increment):
        """Several fixed-window counters in one round trip: each counted once more when ``increment``
        (a new one expires after its seconds), or read; their counts, in order."""
        keys = [key for key, _seconds in keys_and_seconds]
        seconds = [int(seconds) for _key, seconds in keys_and_seconds]
        return [int(count) for count in self._script(_COUNT_IN_WINDOWS)(keys=keys, args=[int(increment), *seconds])]

    def _script(self, source):
        client = self.get_client(write=True)
        script = self._scripts.get((id(client), source))
        if script is None:
            script = self._scripts[(id(client), source)] = client.register_script(source)
        return script


# Run on the Redis server, atomically (EVALSHA: after the first call only its digest travels).
_INCR_EXISTING = "if redis.call('exists', KEYS[1]) == 1 then return redis.call('incrby', KEYS[1], ARGV[1]) end return false"
# ARGV[1]: 1 to count, 0 to read; ARGV[1 + i]: the seconds KEYS[i] lives once created. A count is
# stored as Django's Redis cache stores an int (its digits), so ``cache.get`` reads it too.
_COUNT_IN_WINDOWS = """
local counts = {}
for i, key in ipairs(KEYS) do
  if ARGV[1] == '1' then
    counts[i] = redis.call('incr', key)
    if counts[i] == 1 then redis.call('expire', key, ARGV[i + 1]) end
  else
    counts[i] = tonumber(redis.call('get', key) or '0')
  end
end
return counts
"""


class ResilientRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient

    add = _degraded(lambda *a, **k: False)(RedisCache.add)
    get = _degraded(lambda key, default=None, version=None: default)(RedisCache.get)
    set = _degraded(lambda *a, **k: None)(RedisCache.set)
    touch = _degraded(lambda *a, **k: False)(RedisCache.touch)
    delete = _degraded(lambda *a, **k: False)(RedisCache.delete)
    get_many = _degraded(lambda *a, **k: {})(RedisCache.get_many)
    has_key = _degraded(lambda *a, **k: False)(RedisCache.has_key)
    incr = _degraded(_missing_key)(RedisCache.incr)
    set_many = _degraded(lambda data, *a, **k: list(data))(RedisCache.set_many)
    delete_many = _degraded(lambda *a, **k: None)(RedisCache.delete_many)
    clear = _degraded(lambda *a, **k: False)(RedisCache.clear)

    @_degraded(lambda *a, **k: None)
    def count_in_windows(self, keys_and_seconds, *, increment: bool) -> list[int]:
        """``djangokit.rate_limits``' counters, in one round trip (the keys made as the cache's own)."""
        return self._cache.count_in_windows(
            [(self.make_and_validate_key(key), seconds) for key, seconds in keys_and_seconds], increment=increment)


class SessionRedisCache(ResilientRedisCache):
    """The sessions' cache: ``ResilientRedisCache`` whose entries live at most ``MAX_TIMEOUT`` seconds
    (a key of the cache's settings, 300 by default), after which a session is read from the database
    again. A write that Redis did not take while it was unreachable but kept its data (a logout
    during a network partition, say) then leaves a stale copy behind for that long at most, not for
    the rest of the session's life (two weeks by default)."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self.max_timeout = int(params.get("MAX_TIMEOUT", 300))

    def get_backend_timeout(self, timeout=DEFAULT_TIMEOUT):
        seconds = super().get_backend_timeout(timeout)
        # None is "never expire"; 0 deletes the key and stays 0.
        return self.max_timeout if seconds is None else min(seconds, self.max_timeout)
