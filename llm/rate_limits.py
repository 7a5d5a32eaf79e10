"""How many requests the LLM client keeps in flight, and how fast it starts them, adapted to the
server's rate limits.

Two mechanisms, both fed by what the server says (``kernel.retry.rate_limit_headers``):

- **Pacing (a token bucket mirrored from the headers).** ``x-ratelimit-limit-requests`` and
  ``x-ratelimit-limit-tokens`` are per-minute limits: the server refills ``limit / 60`` per
  second. Each request books its cost (1 request; its estimated tokens) on a schedule at that
  rate times ``factor`` (GCRA: the next start is ``max(now, previous start + cost / rate)``), so
  the client sends at the allowed rate instead of running into it. The token cost is the
  request's worst-case prompt estimate scaled by the ratio of real to estimated prompt tokens
  learned from the responses' ``usage``, plus its ``max_tokens``. When a response shows less
  ``remaining`` than one request needs, new starts wait for the refill (``reset`` when the limit
  is unknown).
- **AIMD.** The number of requests in flight starts at ``initial_concurrency`` (4 by default,
  so a first burst cannot overrun a server whose limits are not known yet); until the first 429
  it grows by one per success (slow start, doubling per round trip), afterwards by ``1 / limit``
  per success (one per round trip), never above ``max_concurrency``. A 429 halves it (not below
  ``min_concurrency``) and cuts ``factor`` by a quarter, which then recovers by ``factor_step``
  per success. A server that sends no headers is handled by AIMD alone; the
  429's ``Retry-After`` pauses every request (the one retry policy, ``kernel.retry``).

``RateController`` is the arithmetic, with the clock passed in (tests drive it without
waiting); ``RateGate`` puts it in front of an asyncio event loop.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from kernel.retry import RateLimitHeaders

SECONDS_PER_MINUTE = 60.0
DEFAULT_INITIAL_CONCURRENCY = 4


@dataclass
class _Bucket:
    """One limited quantity (requests or tokens) as the client mirrors it."""

    rate: float | None = None  # units per second the server refills (its per-minute limit / 60)
    next_start: float = 0.0  # GCRA: the earliest start of the next booking
    hold_until: float = 0.0  # the server said it is (nearly) empty: nothing starts before this

    def learn(self, limit: float | None, remaining: float | None, reset: float | None, need: float, now: float) -> None:
        if limit is not None and limit > 0:
            self.rate = limit / SECONDS_PER_MINUTE
        if remaining is None or remaining >= need:
            return
        if self.rate:
            wait = (need - remaining) / self.rate
        elif reset is not None:
            wait = reset
        else:
            return
        self.hold_until = max(self.hold_until, now + wait)


@dataclass
class Booking:
    start: float  # when the request may start (clock time)
    tokens: float  # the token cost booked for it


class RateController:
    """Concurrency (AIMD) and pacing (token buckets from the headers) for one server."""

    def __init__(
        self,
        *,
        max_concurrency: int,
        min_concurrency: int = 1,
        initial_concurrency: int | None = None,
        adaptive: bool = True,
        decrease: float = 0.5,
        factor_decrease: float = 0.75,
        factor_step: float = 0.01,
        min_factor: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_concurrency < 1 or not 1 <= min_concurrency <= max_concurrency:
            raise ValueError("concurrency bounds must satisfy 1 <= min_concurrency <= max_concurrency")
        self.max_concurrency, self.min_concurrency = max_concurrency, min_concurrency
        start = initial_concurrency if initial_concurrency is not None else DEFAULT_INITIAL_CONCURRENCY
        self.limit = float(min(max(start, min_concurrency), max_concurrency))
        self.adaptive = adaptive
        self.decrease, self.factor_decrease = decrease, factor_decrease
        self.factor_step, self.min_factor = factor_step, min_factor
        self.factor = 1.0
        self.clock = clock
        self.requests, self.tokens = _Bucket(), _Bucket()
        self.token_ratio = 1.0  # real prompt tokens per estimated one (estimates are upper bounds)
        self._ratio_learned = False
        self.rate_limited = 0  # 429 answers seen
        self.typical_tokens = 0.0  # the last booked token cost: what "one request" needs

    # ---- what may start --------------------------------------------------------------------

    @property
    def concurrency(self) -> int:
        return int(self.limit) if self.adaptive else self.max_concurrency

    def token_cost(self, prompt_estimate: float, completion_tokens: float) -> float:
        return prompt_estimate * self.token_ratio + completion_tokens

    def book(self, *, prompt_estimate: float = 0.0, completion_tokens: float = 0.0, now: float | None = None) -> Booking:
        """Reserve the next start for a request of this size: when it may be sent."""
        now = self.clock() if now is None else now
        tokens = self.token_cost(prompt_estimate, completion_tokens)
        if not self.adaptive:
            return Booking(now, tokens)
        self.typical_tokens = tokens
        start = max(now, self.requests.hold_until, self.tokens.hold_until)
        for bucket in (self.requests, self.tokens):
            if bucket.rate:
                start = max(start, bucket.next_start)
        for bucket, cost in ((self.requests, 1.0), (self.tokens, tokens)):
            if bucket.rate:
                bucket.next_start = start + cost / (bucket.rate * self.factor)
        return Booking(start, tokens)

    # ---- what the server said ----------------------------------------------------------------

    def on_success(self, headers: RateLimitHeaders | None = None, *, prompt_estimate: float | None = None,
                   prompt_tokens: float | None = None, now: float | None = None) -> None:
        if not self.adaptive:
            return
        now = self.clock() if now is None else now
        if prompt_estimate and prompt_tokens is not None and prompt_tokens > 0:
            observed = min(1.0, prompt_tokens / prompt_estimate)
            self.token_ratio = observed if not self._ratio_learned else 0.8 * self.token_ratio + 0.2 * observed
            self._ratio_learned = True
        self._learn(headers, now)
        growth = 1.0 if self.rate_limited == 0 else 1.0 / self.limit  # slow start until the first 429
        self.limit = min(float(self.max_concurrency), self.limit + growth)
        self.factor = min(1.0, self.factor + self.factor_step)

    def on_rate_limited(self, headers: RateLimitHeaders | None = None, *, now: float | None = None) -> None:
        self.rate_limited += 1
        if not self.adaptive:
            return
        now = self.clock() if now is None else now
        self._learn(headers, now)
        self.limit = max(float(self.min_concurrency), self.limit * self.decrease)
        self.factor = max(self.min_factor, self.factor * self.factor_decrease)

    def _learn(self, headers: RateLimitHeaders | None, now: float) -> None:
        if headers is None or headers.empty:
            return
        self.requests.learn(headers.limit_requests, headers.remaining_requests, headers.reset_requests, 1.0, now)
        self.tokens.learn(headers.limit_tokens, headers.remaining_tokens, headers.reset_tokens,
                          self.typical_tokens, now)

    def describe(self) -> dict:
        return {
            "concurrency": self.concurrency, "factor": round(self.factor, 3),
            "requests_per_second": self.requests.rate, "tokens_per_second": self.tokens.rate,
            "token_ratio": round(self.token_ratio, 4), "rate_limited": self.rate_limited,
        }


class RateGate:
    """``RateController`` on one event loop: ``async with gate.slot():`` holds one of the
    ``concurrency`` places in flight; ``await gate.wait_turn(...)`` sleeps until the booked start."""

    def __init__(self, controller: RateController) -> None:
        self.controller = controller
        self.in_flight = 0
        self._changed = asyncio.Condition()

    def slot(self) -> _Slot:
        return _Slot(self)

    async def _acquire(self) -> None:
        async with self._changed:
            while self.in_flight >= self.controller.concurrency:
                await self._changed.wait()
            self.in_flight += 1

    async def _release(self) -> None:
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()  # the limit may have grown: wake everyone to re-check

    async def wait_turn(self, *, prompt_estimate: float, completion_tokens: float) -> Booking:
        booking = self.controller.book(prompt_estimate=prompt_estimate, completion_tokens=completion_tokens)
        pause = booking.start - self.controller.clock()
        if pause > 0:
            await asyncio.sleep(pause)
        return booking


class _Slot:
    def __init__(self, gate: RateGate) -> None:
        self.gate = gate

    async def __aenter__(self) -> None:
        await self.gate._acquire()

    async def __aexit__(self, *exc_info) -> None:
        await self.gate._release()
