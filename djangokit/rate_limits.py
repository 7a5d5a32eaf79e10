"""Fixed-window request counters in the cache: every counter of a request in one round trip.

A counter is a name (a group and scope of ``settings.RATE_LIMITS``), who is counted (a client
address, a worker) and a rate, ``"<count>/<s|m|h|d>"`` (``"10/5m"``: ten per five minutes). Its
window is the rate's period, shifted by a fixed offset per counted value so that windows do not all
end at the same second; a request is over the limit once its window holds more than ``count``.

This replaces django-ratelimit's ``get_usage``, whose windows and keys it follows: that function asks
the cache twice per counter (``add``, then ``incr``), four round trips on every worker request with
two counters, which the load bench's profile showed at about 7 % of a task's server time. A cache
that counts several keys in one call (``count_in_windows``, ``crowdbench.cache``) is asked once per
request; any other Django cache (the memory cache of ``make demo`` and of tests) is asked per counter.

``RATE_LIMITS_ENABLED`` off: nothing is counted. The cache unavailable: nothing is counted and
requests pass with ``RATE_LIMITS_FAIL_OPEN`` (the default), or are all over their limit without it.
"""
from __future__ import annotations

import hashlib
import ipaddress
import re
import time
import zlib
from dataclasses import dataclass
from typing import Iterable

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")
# A counter outlives its window by a few seconds, so that one read at the window's very end still
# finds it.
_EXPIRY_MARGIN = 5
_KEY_PREFIX = "rl:"


def parse_rate(rate: str) -> tuple[int, int]:
    """``"20/m"`` → (20, 60); ``"10/5m"`` → (10, 300). ``ImproperlyConfigured`` names the bad rate."""
    match = _RATE.match(rate or "")
    if match is None:
        raise ImproperlyConfigured(f"A rate limit is '<count>/<s|m|h|d>' (e.g. '20/m'), got {rate!r}")
    count, multiple, unit = match.groups()
    return int(count), _PERIODS[unit] * (int(multiple) if multiple else 1)


def client_address(request) -> str:
    """The address a client is counted by: ``RATE_LIMIT_ADDRESS_HEADER`` behind a proxy (a request
    without it did not come through the proxy: its own address), else ``REMOTE_ADDR``. An IPv6
    address counts by its /64 network, as one host usually holds the whole of it."""
    header = settings.RATE_LIMIT_ADDRESS_HEADER
    address = ((request.META.get(header) if header else None) or request.META.get("REMOTE_ADDR") or "").strip()
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        # Not an address (a forged header, a Unix socket): counted by its text, bounded.
        return address[:100]
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False).network_address)
    return str(parsed)


@dataclass(frozen=True)
class Counter:
    name: str
    who: str
    rate: str


@dataclass(frozen=True)
class Usage:
    count: int
    limit: int
    seconds_left: int

    @property
    def over(self) -> bool:
        return self.count > self.limit


def counters_of(request, group: str, worker: str | None) -> list[Counter]:
    """The counters of a request in a group of ``settings.RATE_LIMITS``: per client address, and per
    worker when ``worker`` names one (a scope without a rate counts nothing)."""
    rule = settings.RATE_LIMITS[group]
    found = []
    if rule.get("per_address"):
        found.append(Counter(name=f"{group}:address", who=client_address(request), rate=rule["per_address"]))
    if worker is not None and rule.get("per_worker"):
        found.append(Counter(name=f"{group}:worker", who=worker, rate=rule["per_worker"]))
    return found


def _window_end(who: str, period: int, now: int) -> int:
    if period == 1:
        return now
    end = now - (now % period) + (zlib.crc32(who.encode("utf-8", "replace")) % period)
    return end + period if end < now else end


def count_requests(counters: Iterable[Counter], *, increment: bool = True, cache_alias: str = "default") -> list[Usage] | None:
    """The usage of each counter, counting this request in each when ``increment``; None when rate
    limits are off, or when the cache is unavailable and they fail open."""
    if not settings.RATE_LIMITS_ENABLED:
        return None
    counters = list(counters)
    if not counters:
        return []
    now = int(time.time())
    plans = []
    for counter in counters:
        limit, period = parse_rate(counter.rate)
        end = _window_end(counter.who, period, now)
        digest = hashlib.sha256(f"{counter.name}\0{limit}/{period}\0{counter.who}\0{end}".encode("utf-8", "replace"))
        plans.append((_KEY_PREFIX + digest.hexdigest(), period + _EXPIRY_MARGIN, limit, end))
    cache = caches[cache_alias]
    counting = getattr(cache, "count_in_windows", None)
    if counting is not None:
        counts = counting([(key, seconds) for key, seconds, _limit, _end in plans], increment=increment)
    else:
        counts = [_count_one(cache, key, seconds, increment) for key, seconds, _limit, _end in plans]
    if counts is None or any(count is None for count in counts):
        if settings.RATE_LIMITS_FAIL_OPEN:
            return None
        # No count can be kept: every request is over, and asked to come back in a second.
        return [Usage(count=1, limit=0, seconds_left=1) for _ in plans]
    return [Usage(count=int(count), limit=limit, seconds_left=max(end - now, 0))
            for count, (_key, _seconds, limit, end) in zip(counts, plans)]


def _count_one(cache, key: str, seconds: int, increment: bool) -> int | None:
    """One counter through the plain cache interface (two calls at most)."""
    if not increment:
        return cache.get(key, 0)
    if cache.add(key, 1, seconds):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between the two calls, or the cache is unavailable
        return None
