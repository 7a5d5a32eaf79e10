"""One limiter for every credential check: the sign-in forms, researcher API tokens and
leaderboard submission tokens all count against the same ``RATE_LIMITS["login"]`` counters.

Two counters, both per client address, so that nobody can lock another person out from
elsewhere:

- every attempt from one address (``per_address``), whatever user name or token it tries;
- attempts at one user name from one address (``per_worker``): ten wrong passwords typed by an
  attacker with a victim's user name lock the attacker's address out of that account, not the
  victim, who signs in from their own address (the combination django-axes recommends).

The sign-in forms are counted by ``RateLimitMiddleware`` before the view runs (every POST is an
attempt). API credentials are counted here, on failure only: a valid token is not an attempt,
and a client over the limit is refused before its credential is looked up.
"""
from __future__ import annotations

from django.utils.translation import gettext as _
from djangokit.rate_limits import client_address, count_requests, counters_of
from knox.auth import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled

GROUP = "login"


def sign_in_key(request, username: str) -> str:
    """The per-user counter's key: the user name tried, from this address."""
    return f"login:{username.strip().lower()[:150]}@{client_address(request)}"


def seconds_refused(request, *, username: str | None = None, count: bool) -> int | None:
    """Seconds this client must wait before its next credential check, or None.

    ``count`` records an attempt (a failed one, for API credentials) before deciding.
    """
    usages = count_requests(counters_of(request, GROUP, sign_in_key(request, username) if username else None),
                            increment=count)
    wait = None
    for usage in usages or ():  # None: rate limits off, or the cache unavailable with fail-open
        over = usage.over if count else usage.count >= usage.limit
        if over:
            wait = max(wait or 1, usage.seconds_left)
    return wait


def too_many_attempts_message(seconds: int) -> str:
    return _("Too many requests (sign-in attempts); please wait %(seconds)d seconds and try again.") % {
        "seconds": seconds}


class CountedCredentialsMixin:
    """For a DRF authentication class whose credential is a secret: refuse a client over the
    limit before looking its credential up, and count each credential that fails."""

    def authenticate(self, request):
        django_request = request._request
        wait = seconds_refused(django_request, count=False)
        if wait is not None and request.META.get("HTTP_AUTHORIZATION"):
            raise Throttled(wait=wait, detail=too_many_attempts_message(wait))
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            seconds_refused(django_request, count=True)
            raise


class CountedTokenAuthentication(CountedCredentialsMixin, TokenAuthentication):
    """``Authorization: Token …``: a researcher's knox token, counted by the sign-in limiter."""
