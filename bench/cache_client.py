"""Benchmark: CPU per Redis cache read with Django's cache client against the client crowdbench uses
(``crowdbench.cache.ReusedClientRedisCacheClient``, one ``redis.Redis`` per connection pool), in one
run on the same Redis. Every worker request reads and writes the cache several times (session,
cached user, rate-limit counters), so this cost is paid on each.

Run from the repository root: ``python bench/cache_client.py`` (Redis at ``--cache-url``, default
``redis://127.0.0.1:6379/15``). Target: the reused client costs at most 0.75 x Django's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 0.75


def cpu_per_call_us(cache, client_class, calls: int) -> float:
    cache._class = client_class
    cache.__dict__.pop("_cache", None)  # the cached client object, built again with the class above
    cache.get("bench-key")  # connect before measuring
    started = time.process_time()
    for _ in range(calls):
        cache.get("bench-key")
    return (time.process_time() - started) / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.update({"DJANGO_SETTINGS_MODULE": "crowdbench.settings", "CACHE_URL": args.cache_url})
    import django

    django.setup()
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCacheClient

    from crowdbench.cache import ReusedClientRedisCacheClient

    cache = caches["default"]
    cache.set("bench-key", "a value")
    django_us, reused_us = [], []
    for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits both alike
        django_us.append(cpu_per_call_us(cache, RedisCacheClient, args.calls))
        reused_us.append(cpu_per_call_us(cache, ReusedClientRedisCacheClient, args.calls))
    cache.delete("bench-key")
    baseline, reused = statistics.median(django_us), statistics.median(reused_us)
    ratio = reused / baseline
    print(f"cache.get, CPU per call (median of {args.repeats} x {args.calls}): Django's client {baseline:.0f} us, "
          f"reused client {reused:.0f} us; ratio {ratio:.2f} (target <= {TARGET_RATIO})")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
