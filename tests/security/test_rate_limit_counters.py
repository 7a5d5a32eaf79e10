"""The rate limits' counters (``djangokit.rate_limits``): rates, windows, addresses, and one round trip
to Redis for all the counters of a request. The limits as workers meet them are in test_rate_limits.py."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory
from django.urls import reverse

from crowdbench.cache import ResilientRedisCache
from crowdbench.middleware import RateLimitMiddleware
from djangokit import rate_limits
from djangokit.rate_limits import Counter, client_address, count_requests, parse_rate
from tests.redis_commands import commands_sent


@pytest.mark.parametrize("rate, parsed", [("20/m", (20, 60)), ("10/5m", (10, 300)), ("1/s", (1, 1)),
                                          ("600/h", (600, 3600)), (" 3 / d ", (3, 86400))])
def test_rates_are_read_as_a_count_per_period(rate, parsed):
    assert parse_rate(rate) == parsed


@pytest.mark.parametrize("rate", ["", "20", "20/x", "m/20", "-1/m", "20/m;drop"])
def test_a_rate_that_cannot_be_read_is_named(rate):
    with pytest.raises(ImproperlyConfigured, match="<count>/<s|m|h|d>"):
        parse_rate(rate)


def test_a_bad_rate_in_the_settings_stops_the_server_at_start(settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS,
                            "submission": {**settings.RATE_LIMITS["submission"], "per_worker": "thirty a minute"}}
    with pytest.raises(ImproperlyConfigured, match="thirty a minute"):
        RateLimitMiddleware(lambda request: None)


def test_the_client_address_is_the_proxys_header_with_ipv6_counted_by_its_network(settings):
    factory = RequestFactory()
    assert client_address(factory.get("/", REMOTE_ADDR="192.0.2.7")) == "192.0.2.7"
    assert client_address(factory.get("/", REMOTE_ADDR="2001:db8:1:2:3:4:5:6")) == "2001:db8:1:2::"
    settings.RATE_LIMIT_ADDRESS_HEADER = "HTTP_X_REAL_IP"
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_REAL_IP="198.51.100.9")) == "198.51.100.9"
    # Without the header the request did not pass the proxy: its own address counts.
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.1")) == "10.0.0.1"
    # A forged header that is no address is counted by its text, bounded: never an error.
    assert client_address(factory.get("/", HTTP_X_REAL_IP="x" * 500)) == "x" * 100


@pytest.mark.django_db
def test_a_forged_address_header_gets_the_sign_in_form_not_an_error(settings):
    settings.RATE_LIMIT_ADDRESS_HEADER = "HTTP_X_REAL_IP"
    response = Client(HTTP_X_REAL_IP="not-an-address\u00e9").post(reverse("login"), {"username": "a", "password": "b"})
    assert response.status_code == 200


def test_counts_restart_when_the_window_ends(monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr(rate_limits.time, "time", lambda: clock[0])
    counter = [Counter(name="g:worker", who="user:1", rate="2/m")]
    counts = [count_requests(counter)[0] for _ in range(3)]
    assert [usage.count for usage in counts] == [1, 2, 3]
    assert [usage.over for usage in counts] == [False, False, True]
    left = counts[-1].seconds_left
    assert 0 <= left < 60
    clock[0] += left  # the window's last second: still the same window
    assert count_requests(counter)[0].count == 4
    clock[0] += 1
    fresh = count_requests(counter)[0]
    assert (fresh.count, fresh.over) == (1, False)
    # A changed rate is a new counter, not the old count measured against a new limit.
    assert count_requests([Counter(name="g:worker", who="user:1", rate="5/m")])[0].count == 1


def test_reading_a_count_does_not_count(settings):
    counter = [Counter(name="login:address", who="192.0.2.1", rate="3/h")]
    assert count_requests(counter, increment=False)[0].count == 0
    count_requests(counter)
    assert [count_requests(counter, increment=False)[0].count for _ in range(2)] == [1, 1]
    settings.RATE_LIMITS_ENABLED = False
    assert count_requests(counter) is None


def test_redis_counts_every_counter_of_a_request_in_one_round_trip(redis_server, monkeypatch):
    cache = ResilientRedisCache(redis_server.url(0), {})
    monkeypatch.setattr(rate_limits, "caches", {"default": cache})
    client = cache._cache.get_client(write=True)
    counters = [Counter(name="submission:address", who="192.0.2.1", rate="3/m"),
                Counter(name="submission:worker", who="user:7", rate="2/m")]
    count_requests([Counter(name="warm-up", who="-", rate="1/s")])  # Redis learns the script
    client.delete(*client.keys("*rl:*"))
    with commands_sent(client) as sent:
        usages = [count_requests(counters) for _ in range(4)]
        assert count_requests(counters, increment=False)[1].count == 4
    assert sent == ["EVALSHA"] * 5  # one command a request: the script's digest and the keys
    assert [[usage.count for usage in request] for request in usages] == [[1, 1], [2, 2], [3, 3], [4, 4]]
    assert [[usage.over for usage in request] for request in usages] == [
        [False, False], [False, False], [False, True], [True, True]]
    # Stored as the cache stores an int, expiring a few seconds after the window.
    keys = client.keys("*rl:*")
    assert len(keys) == 2
    assert all(60 < client.ttl(key) <= 65 for key in keys)
    assert sorted(cache.get(key.decode().split(":", 2)[2]) for key in keys) == [4, 4]
