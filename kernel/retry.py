"""The one retry policy for calls to outside services: LLM servers, MTurk and Prolific.

Each client classifies its own failures: an attempt that another attempt may fix raises
``TransientError`` (with the pause the server asked for, if any); anything else is final. The
policy decides how often and how long to wait: exponential backoff with equal jitter, capped,
and never shorter than a server's ``Retry-After``/``retry-after-ms`` (itself capped). The client
libraries underneath are built with their own retries off, so every call is retried by this layer
alone.

    policy = RetryPolicy(attempts=4, base=1.0)
    result = policy.call(lambda: send(), describe="Prolific GET /studies/")

A connection failure is transient in two cases only (``connection_failure`` tells them apart):
the request was never sent (no connection could be made: nothing happened, so any call may be sent
again), or its answer was lost (the connection closed or timed out after the request went out:
the call may have taken effect) and the call is idempotent. Each client declares at the call site
which of its calls are idempotent: reads, calls carrying an idempotency token, and writes that set
a state; a call that is not (a payment without a token) is never repeated after a lost answer.
"""
from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeVar

import tenacity

T = TypeVar("T")

logger = logging.getLogger(__name__)


class TransientError(Exception):
    """One attempt failed in a way that a later attempt may not. ``retry_after`` is the pause in
    seconds the server asked for (None when it did not say)."""

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status

    @property
    def rate_limited(self) -> bool:
        return self.status == 429


def retry_after_seconds(headers) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds or
    an HTTP date. ``headers`` is any case-insensitive mapping (httpx, requests) or a dict."""
    if not headers:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")


def parse_duration(value: str | None) -> float | None:
    """Seconds in a rate-limit reset value: Go-style durations as OpenAI sends them (``"6m0s"``,
    ``"1.5s"``, ``"20ms"``, ``"1h2m"``) or a plain number of seconds; None when unreadable."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(number) * scale[unit] for number, unit in parts)


@dataclass(frozen=True)
class RateLimitHeaders:
    """What a server said about its rate limits in one response (None where it did not say):
    the per-minute limits, what remains of them now, and the seconds until they are whole again."""

    limit_requests: float | None = None
    remaining_requests: float | None = None
    reset_requests: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None
    reset_tokens: float | None = None

    @property
    def empty(self) -> bool:
        return all(value is None for value in vars(self).values())


def _number(headers, name: str) -> float | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 and number == number and number != float("inf") else None


def rate_limit_headers(headers) -> RateLimitHeaders:
    """OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers of a response
    (any case-insensitive mapping); unreadable values count as absent."""
    if not headers:
        return RateLimitHeaders()
    return RateLimitHeaders(
        limit_requests=_number(headers, "x-ratelimit-limit-requests"),
        remaining_requests=_number(headers, "x-ratelimit-remaining-requests"),
        reset_requests=parse_duration(headers.get("x-ratelimit-reset-requests")),
        limit_tokens=_number(headers, "x-ratelimit-limit-tokens"),
        remaining_tokens=_number(headers, "x-ratelimit-remaining-tokens"),
        reset_tokens=parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )


NOT_SENT = "not sent"
ANSWER_LOST = "answer lost"


def connection_failure(error: BaseException) -> str | None:
    """How a client library's connection error left the request: ``NOT_SENT`` (no connection was
    made), ``ANSWER_LOST`` (sent, then the connection closed, reset or timed out before a complete
    answer), or None when ``error`` is no connection error (botocore's and httpx's)."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx is a requirement
        httpx = None
    try:
        from botocore import exceptions as botocore
    except ImportError:  # pragma: no cover - boto3 is a requirement
        botocore = None
    if httpx is not None:
        if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
            return NOT_SENT
        if isinstance(error, httpx.TransportError) and not isinstance(error, (httpx.UnsupportedProtocol,
                                                                               httpx.LocalProtocolError,
                                                                               httpx.ProxyError)):
            return ANSWER_LOST
    if botocore is not None:
        if isinstance(error, botocore.ConnectionError):  # EndpointConnectionError, ConnectTimeoutError, ...
            return NOT_SENT
        if isinstance(error, botocore.HTTPClientError):  # ConnectionClosedError, ReadTimeoutError, ...
            return ANSWER_LOST
    return None


def transient_connection_failure(error: BaseException, *, idempotent: bool) -> bool:
    """Whether another attempt may be made after this connection error: when the request was
    never sent, or its answer was lost and the call is idempotent."""
    kind = connection_failure(error)
    return kind == NOT_SENT or (kind == ANSWER_LOST and idempotent)


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all (the first included); before try n+1 the pause is drawn from
    [c/2, c] with c = min(cap, base * 2**(n-1)), and raised to the server's ``Retry-After`` (at
    most ``retry_after_max``) when it asked for longer."""

    attempts: int = 5
    base: float = 0.5
    cap: float = 30.0
    retry_after_max: float = 120.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")
        if self.base < 0 or self.cap < 0 or self.retry_after_max < 0:
            raise ValueError("retry pauses must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The pause after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.cap, self.base * 2 ** (attempt - 1))
        pause = ceiling / 2 + random.uniform(0, ceiling / 2)  # equal jitter: spread, never zero
        if retry_after is not None:
            pause = max(pause, min(retry_after, self.retry_after_max))
        return pause

    def _wait(self, state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return self.delay(state.attempt_number, getattr(error, "retry_after", None))

    def _log(self, describe: str) -> Callable[[tenacity.RetryCallState], None]:
        def log(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            logger.warning(
                "%s: %s, attempt %d/%d; retrying in %.2fs",
                describe, error, state.attempt_number, self.attempts,
                state.next_action.sleep if state.next_action else 0.0,
            )
        return log

    def retrying(self, *, describe: str, sleep: Callable[[float], object] = time.sleep) -> tenacity.Retrying:
        """A tenacity controller: ``for attempt in policy.retrying(...): with attempt: ...``.
        The last ``TransientError`` is re-raised once the attempts are used up."""
        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts), wait=self._wait,
            retry=tenacity.retry_if_exception_type(TransientError), reraise=True,
            sleep=sleep, before_sleep=self._log(describe),
        )

    def async_retrying(
        self, *, describe: str, sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    ) -> tenacity.AsyncRetrying:
        return tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.attempts), wait=self._wait,
            retry=tenacity.retry_if_exception_type(TransientError), reraise=True,
            sleep=sleep, before_sleep=self._log(describe),
        )

    def call(self, attempt: Callable[[], T], *, describe: str) -> T:
        """``attempt()`` until it returns or raises something other than ``TransientError``."""
        return self.retrying(describe=describe)(attempt)
