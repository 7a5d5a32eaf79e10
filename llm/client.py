"""The one way crowdbench talks to LLMs.

Every request goes through ``LLMClient``: the response cache is checked first, then the run's
budget reserves the request's worst-case cost, then the ``openai`` SDK sends it with bounded
concurrency, paced by the server's rate-limit headers and adapted to its 429s (``llm.rate_limits``),
and the one retry policy (``kernel.retry``), and the outcome is stored as an ``LLMCall``.

    from llm.client import chat_request, run_batch, complete

    result = complete("Describe the image.", images=["photo.jpg"], purpose="irr_review")
    results = run_batch([chat_request(text) for text in prompts], run=run, progress=bar_update)

Sync entry points (``complete``, ``completion``, ``run_batch``) are for management commands and
Celery tasks; async code awaits ``LLMClient.arun`` instead.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

import httpx
import openai
from asgiref.sync import async_to_sync, sync_to_async
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone as django_timezone

from kernel.retry import RetryPolicy, TransientError, rate_limit_headers, retry_after_seconds

from .calls import (
    COMPLETION_LIMIT_PARAMS,
    BudgetExceeded,
    LLMCallFailed,
    LLMRequest,
    LLMResult,
    RenderedPrompt,
    message_text,
    chat_request,
    completion_request,
    max_completion_tokens,
    max_prompt_tokens,
    request_hash,
    storable_body,
)
from . import embedded
from .config import LLMConfig, LLMNotConfigured, ModelPrice
from .images import ImageSource, image_url, vision_message
from .models import LLMCall, LLMRun
from .rate_limits import RateController, RateGate
from .selectors import successful_calls_by_hash
from .services import new_call, save_call

__all__ = [
    "BatchResults",
    "BatchStats",
    "BudgetExceeded",
    "LLMCallFailed",
    "LLMClient",
    "LLMNotConfigured",
    "LLMRequest",
    "LLMResult",
    "RenderedPrompt",
    "chat_request",
    "complete",
    "completion",
    "completion_request",
    "image_url",
    "retry_after_seconds",
    "run_batch",
    "vision_message",
]

logger = logging.getLogger(__name__)

Progress = Callable[[LLMResult], object]

# 408/409 are what OpenAI sends for request timeouts and lock contention; both succeed on retry.
RETRYABLE_STATUSES = frozenset({408, 409, 429})

FLUSH_INTERVAL = 0.05  # seconds between database writes of finished calls
ENDPOINT_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


@dataclass
class BatchStats:
    requests: int = 0
    cache_hits: int = 0
    sent: int = 0  # distinct requests that reached the network
    http_attempts: int = 0
    retries: int = 0
    ok: int = 0
    failed: int = 0
    budget_exceeded: int = 0
    db_flushes: int = 0
    db_seconds: float = 0.0
    wall_seconds: float = 0.0


class BatchResults(list):
    """The results, in request order, plus ``stats`` for the whole batch."""

    stats: BatchStats


@dataclass
class _Call:
    """A request resolved against the settings: exact body, cache key, worst-case cost."""

    request: LLMRequest
    model: str
    body: dict
    request_hash: str
    price: ModelPrice | None
    max_cost: Decimal | None
    prompt_estimate: int = 0  # upper bound on prompt tokens (llm.calls.max_prompt_tokens)
    completion_limit: int = 0  # max_tokens x choices


@dataclass
class _Outcome:
    call: _Call
    result: LLMResult
    reserved: Decimal = Decimal(0)
    store: bool = True
    copies: int = 1  # the same request this many times in the batch: progress ticks for each


class _Budget:
    """Spent + reserved never exceeds the cap: a request waits while in-flight reservations may
    still shrink, and the run stops once a request cannot fit with nothing else in flight."""

    def __init__(self, cap: Decimal | None, spent: Decimal) -> None:
        self.cap = cap
        self.spent = spent
        self.reserved = Decimal(0)
        self.exhausted = False
        self.refusal = ""
        self._changed = asyncio.Condition()

    async def reserve(self, amount: Decimal) -> bool:
        if self.cap is None:
            return True
        async with self._changed:
            while not self.exhausted:
                if self.spent + self.reserved + amount <= self.cap:
                    self.reserved += amount
                    return True
                if self.reserved == 0:
                    self.exhausted = True
                    self.refusal = (
                        f"budget of ${self.cap} reached: ${self.spent} spent, the next request may cost "
                        f"up to ${amount.quantize(Decimal('0.000001'))}; the remaining requests were not sent"
                    )
                    self._changed.notify_all()
                    break
                await self._changed.wait()
            return False

    async def settle(self, released: Decimal, spent: Decimal) -> None:
        async with self._changed:
            self.reserved -= released
            self.spent = spent
            self._changed.notify_all()


class _Recorder:
    """Stores outcomes with group commit: whatever finished while the previous write ran goes
    into the next transaction. Senders never wait for the database, writes keep up with any
    request rate, and each response is on disk within one flush of arriving."""

    def __init__(self, run: LLMRun | None, progress: Progress | None, budget: _Budget, stats: BatchStats):
        self.run = run
        self.progress = progress
        self.budget = budget
        self.stats = stats
        self.queue: asyncio.Queue[_Outcome | None] = asyncio.Queue()
        self.progress_error: BaseException | None = None
        self.write_error: BaseException | None = None
        self.abort: Callable[[], object] = lambda: None  # set by the batch: cancels its workers

    def record(self, outcome: _Outcome) -> None:
        if self.write_error is not None:
            raise self.write_error
        self.queue.put_nowait(outcome)

    async def drain(self) -> None:
        closing = False
        last_flush = 0.0
        while not closing:
            batch: list[_Outcome] = []
            item = await self.queue.get()
            # Fewer, larger transactions: each costs a commit (an fsync on SQLite) and CPU that the
            # event loop shares through the GIL. A response waits at most this long to be stored.
            pause = last_flush + FLUSH_INTERVAL - time.monotonic()
            if pause > 0 and item is not None:
                await asyncio.sleep(pause)
            last_flush = time.monotonic()
            while True:
                if item is None:
                    closing = True
                else:
                    batch.append(item)
                if self.queue.empty():
                    break
                item = self.queue.get_nowait()
            if not batch or self.write_error is not None:
                continue
            started = time.perf_counter()
            try:
                spent, progress_error = await sync_to_async(self._write, thread_sensitive=True)(batch)
            except Exception as exc:  # the database is gone: stop sending
                self.write_error = exc
                self.abort()
                continue
            self.stats.db_flushes += 1
            self.stats.db_seconds += time.perf_counter() - started
            await self.budget.settle(sum((o.reserved for o in batch), Decimal(0)), spent)
            if progress_error is not None and self.progress_error is None:
                self.progress_error = progress_error
                self.abort()

    def _write(self, batch: list[_Outcome]) -> tuple[Decimal, BaseException | None]:
        rows = [(outcome, self._row(outcome)) for outcome in batch if outcome.store]
        charged = sum((row.cost_usd or Decimal(0) for _, row in rows), Decimal(0))
        try:
            spent = self._commit(rows, charged, one_by_one=False)
        except IntegrityError:
            spent = self._commit(rows, charged, one_by_one=True)
        for outcome, row in rows:
            outcome.result.call_id = row.pk
        return spent, self._report(batch)

    def _commit(self, rows: list[tuple[_Outcome, LLMCall]], charged: Decimal, *, one_by_one: bool) -> Decimal:
        spent = self.budget.spent
        with transaction.atomic():
            if one_by_one:
                self._save_one_by_one(rows)
            else:
                LLMCall.objects.bulk_create([row for _, row in rows])
            if self.run is not None:
                if charged:
                    LLMRun.objects.filter(pk=self.run.pk).update(spent_usd=F("spent_usd") + charged)
                # Read back: another process may be spending from the same run.
                spent = LLMRun.objects.values_list("spent_usd", flat=True).get(pk=self.run.pk)
        return spent

    @staticmethod
    def _save_one_by_one(rows: list[tuple[_Outcome, LLMCall]]) -> None:
        for _, row in rows:
            save_call(row)

    def _report(self, batch: list[_Outcome]) -> BaseException | None:
        if self.progress is None or self.progress_error is not None:
            return None
        for outcome in batch:
            try:
                for _ in range(outcome.copies):
                    self.progress(outcome.result)
            except BaseException as exc:  # noqa: BLE001 - re-raised by the batch after a clean stop
                return exc
        return None

    def _row(self, outcome: _Outcome) -> LLMCall:
        call, result = outcome.call, outcome.result
        return new_call(
            ok=result.ok,
            run=self.run,
            request_hash=call.request_hash,
            endpoint=call.request.endpoint,
            model=call.model,
            purpose=call.request.purpose,
            template_name=call.request.template_name,
            template_version=call.request.template_version,
            request=storable_body(call.body),
            http_status=result.http_status,
            response=result.response,
            response_text=result.text or "",
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=result.cost_usd,
            latency_seconds=result.latency_seconds,
            attempts=result.attempts,
            error=result.error,
        )


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        detail = body.get("error", body)
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
    else:
        message = exc.response.text[:500] if exc.response is not None else str(exc)
    return f"HTTP {exc.status_code}: {message}"


class _CancelOnInterrupt:
    """Ctrl-C during a sync batch cancels the batch instead of abandoning it: the loop thread would
    otherwise keep sending while nothing stores the answers. Finished calls are written, then
    KeyboardInterrupt is raised. A second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.fired = False
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Task] | None = None
        self._previous = None

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task) -> None:
        self._target = (loop, task)

    def _handle(self, signum, frame) -> None:
        if self._target is None or self.fired:
            signal.default_int_handler(signum, frame)
        self.fired = True
        loop, task = self._target
        loop.call_soon_threadsafe(task.cancel)

    def __enter__(self) -> _CancelOnInterrupt:
        # Only replace Python's own handler, and only where signals can be handled at all.
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


class LLMClient:
    """Settings come from Django settings; keyword arguments override them (tests, benchmarks)."""

    def __init__(self, config: LLMConfig | None = None, **overrides) -> None:
        self.config = config if config is not None else LLMConfig.from_settings(**overrides)
        self._gates: dict[asyncio.AbstractEventLoop, RateGate] = {}
        # One per client: what the server's limits are outlives a batch.
        self.rate_controller = RateController(
            max_concurrency=self.config.max_concurrency, adaptive=self.config.adaptive_concurrency
        )
        self._not_before = 0.0  # monotonic time before which no attempt starts (server asked to wait)
        self.retry_policy = RetryPolicy(
            attempts=self.config.max_retries + 1, base=self.config.backoff_base,
            cap=self.config.backoff_max, retry_after_max=self.config.retry_after_max,
        )

    # ---- sync entry points --------------------------------------------------------------------

    def run_batch(
        self, requests: Iterable[LLMRequest], *, run: LLMRun | None = None, progress: Progress | None = None
    ) -> BatchResults:
        interrupt = _CancelOnInterrupt()

        async def batch() -> BatchResults:
            interrupt.attach(asyncio.get_running_loop(), asyncio.current_task())
            return await self.arun(requests, run=run, progress=progress)

        with interrupt:
            try:
                # async_to_sync runs the loop in a helper thread and this thread serves the DB
                # work, so the caller's connection (and transaction, in tests) is the one used.
                return async_to_sync(batch)()
            except asyncio.CancelledError:
                if interrupt.fired:
                    raise KeyboardInterrupt from None
                raise

    def complete(self, prompt: str | RenderedPrompt, *, run: LLMRun | None = None, **kwargs) -> LLMResult:
        return self.run_batch([chat_request(prompt, **kwargs)], run=run)[0]

    def completion(self, prompt: str | RenderedPrompt, *, run: LLMRun | None = None, **kwargs) -> LLMResult:
        return self.run_batch([completion_request(prompt, **kwargs)], run=run)[0]

    # ---- the batch ----------------------------------------------------------------------------

    async def arun(
        self, requests: Iterable[LLMRequest], *, run: LLMRun | None = None, progress: Progress | None = None
    ) -> BatchResults:
        """Results in request order. Never raises for a failed or refused request (see
        ``LLMResult.status``); raises ``LLMNotConfigured`` before sending anything when settings
        are missing, and re-raises an exception from ``progress`` after in-flight work is stored."""
        started = time.perf_counter()
        calls = [self._resolve(request) for request in requests]
        stats = BatchStats(requests=len(calls))
        results: list[LLMResult | None] = [None] * len(calls)

        await sync_to_async(self._fill_from_cache, thread_sensitive=True)(calls, results)
        pending: dict[str, list[int]] = {}
        for index, call in enumerate(calls):
            if results[index] is None:
                pending.setdefault(call.request_hash, []).append(index)
        stats.cache_hits = len(calls) - sum(len(indexes) for indexes in pending.values())
        cap = None
        if pending:
            self.config.require_server()
            if run is not None:
                # As stored now: the cap may have been changed in the admin since run was loaded.
                cap = await sync_to_async(self._current_cap, thread_sensitive=True)(run)
            self._check_prices([calls[indexes[0]] for indexes in pending.values()], run, cap)
        spent = await sync_to_async(self._start, thread_sensitive=True)(run, progress, results)

        if pending:
            budget = _Budget(cap, spent)
            recorder = _Recorder(run, progress, budget, stats)
            stopped = True
            try:
                await self._send_all(calls, pending, results, recorder, budget, stats)
                stopped = recorder.progress_error is not None
            finally:
                await sync_to_async(self._finish, thread_sensitive=True)(run, budget.exhausted, stopped)
            if recorder.progress_error is not None:
                raise recorder.progress_error
        elif run is not None:
            await sync_to_async(self._finish, thread_sensitive=True)(run, False, False)

        stats.ok = sum(1 for result in results if result.ok)
        stats.failed = sum(1 for result in results if result.status == "failed")
        stats.budget_exceeded = sum(1 for result in results if result.status == "budget_exceeded")
        stats.wall_seconds = time.perf_counter() - started
        logger.log(
            logging.INFO if stats.requests > 1 else logging.DEBUG,
            "LLM batch: %d requests, %d from cache, %d sent, %d ok, %d failed, %d refused by budget, %.1fs",
            stats.requests, stats.cache_hits, stats.sent, stats.ok, stats.failed, stats.budget_exceeded,
            stats.wall_seconds,
        )
        batch = BatchResults(results)
        batch.stats = stats
        return batch

    def _resolve(self, request: LLMRequest) -> _Call:
        if not isinstance(request, LLMRequest):
            raise TypeError(f"expected an LLMRequest (see chat_request/completion_request), got {request!r}")
        model = self.config.resolve_model(request.model)
        body = request.body(model)
        if not any(body.get(name) is not None for name in COMPLETION_LIMIT_PARAMS):
            # A ceiling on output is what makes the worst-case cost (and so the budget) finite.
            body["max_tokens"] = self.config.default_max_tokens
        price = self.config.prices.get(model)
        prompt_estimate = max_prompt_tokens(body, self.config.image_tokens_estimate)
        completion_limit = max_completion_tokens(body)
        max_cost = price.cost(prompt_estimate, completion_limit) if price is not None else None
        return _Call(request, model, body, request_hash(request.endpoint, body), price, max_cost,
                     prompt_estimate, completion_limit)

    @staticmethod
    def _current_cap(run: LLMRun) -> Decimal | None:
        return LLMRun.objects.values_list("budget_usd", flat=True).get(pk=run.pk)

    @staticmethod
    def _check_prices(calls: list[_Call], run: LLMRun | None, cap: Decimal | None) -> None:
        if cap is not None:
            unpriced = sorted({call.model for call in calls if call.price is None})
            if unpriced:
                raise LLMNotConfigured(
                    f"run {run.name!r} has a budget but LLM_PRICES has no price for: {', '.join(unpriced)}"
                )

    @staticmethod
    def _fill_from_cache(calls: list[_Call], results: list) -> None:
        stored = successful_calls_by_hash(call.request_hash for call in calls)
        for index, call in enumerate(calls):
            hit = stored.get(call.request_hash)
            if hit is not None:
                results[index] = LLMResult(
                    request=call.request,
                    status="ok",
                    request_hash=call.request_hash,
                    model=hit.model,
                    text=hit.response_text,
                    response=hit.response,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    cost_usd=Decimal(0),
                    cached=True,
                    call_id=hit.pk,
                )

    @staticmethod
    def _start(run: LLMRun | None, progress: Progress | None, results: list) -> Decimal:
        """Marks the run as running and returns what it has spent so far."""
        spent = Decimal(0)
        if run is not None:
            LLMRun.objects.filter(pk=run.pk).update(status=LLMRun.Status.RUNNING, finished_at=None)
            spent = LLMRun.objects.values_list("spent_usd", flat=True).get(pk=run.pk)
        if progress is not None:
            for result in results:
                if result is not None:
                    progress(result)
        return spent

    @staticmethod
    def _finish(run: LLMRun | None, budget_exhausted: bool, interrupted: bool) -> None:
        if run is None:
            return
        if budget_exhausted:
            status = LLMRun.Status.BUDGET_EXCEEDED
        elif interrupted:
            status = LLMRun.Status.INTERRUPTED
        else:
            status = LLMRun.Status.COMPLETED
        LLMRun.objects.filter(pk=run.pk).update(status=status, finished_at=django_timezone.now())
        run.refresh_from_db(fields=["status", "spent_usd", "finished_at"])

    async def _send_all(self, calls, pending, results, recorder: _Recorder, budget: _Budget, stats) -> None:
        queue = list(pending.items())
        queue.reverse()  # pop() from the end keeps request order
        config = self.config
        sdk = openai.AsyncOpenAI(
            base_url=config.base_url or None,
            # Without a key (local vLLM, Ollama) no Authorization header is sent; the callable only
            # keeps the SDK from looking for OPENAI_API_KEY itself.
            api_key=config.api_key or _no_api_key,
            timeout=config.timeout,
            max_retries=0,  # kernel.retry retries, with Retry-After and a shared pause
            http_client=self._embedded_http_client(),
        )
        gate = self._gate()
        drain = asyncio.create_task(recorder.drain())

        async def worker() -> None:
            while queue:
                _, indexes = queue.pop()
                results[indexes[0]] = await self._process(
                    calls[indexes[0]], len(indexes), sdk, gate, recorder, budget, stats
                )

        workers = [asyncio.create_task(worker()) for _ in range(min(len(queue), config.max_concurrency))]
        recorder.abort = lambda: [task.cancel() for task in workers]
        try:
            outcomes = await asyncio.gather(*workers, return_exceptions=True)
            failures = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, asyncio.CancelledError)]
            if failures:
                raise failures[0]
        finally:
            for task in workers:
                task.cancel()
            await self._close_recorder(recorder, drain)
            await sdk.close()
        if recorder.write_error is not None:
            raise recorder.write_error
        for indexes in pending.values():
            leader = results[indexes[0]]
            for index in indexes[1:]:  # the same request twice in one batch: sent once
                results[index] = replace(leader, cached=True, cost_usd=Decimal(0)) if leader.ok else replace(leader)

    def _embedded_http_client(self) -> httpx.AsyncClient | None:
        """With no server configured, the embedded model answers the SDK's requests in-process."""
        if not self.config.embedded:
            return None
        return embedded.async_http_client(self.config.embedded_serving, timeout=self.config.timeout)

    @staticmethod
    async def _close_recorder(recorder: _Recorder, drain: asyncio.Task) -> None:
        # Whatever finished before a stop is still written, so a re-run does not pay for it again.
        if not drain.done():
            await recorder.queue.put(None)
        await drain

    def _gate(self) -> RateGate:
        # One per event loop: every batch this client runs on a loop shares the concurrency bound.
        loop = asyncio.get_running_loop()
        for known in [known for known in self._gates if known.is_closed()]:
            del self._gates[known]
        if loop not in self._gates:
            self._gates[loop] = RateGate(self.rate_controller)
        return self._gates[loop]

    async def _process(
        self, call: _Call, copies: int, sdk, gate: RateGate, recorder: _Recorder, budget: _Budget, stats
    ) -> LLMResult:
        reserved = call.max_cost or Decimal(0)
        if not await budget.reserve(reserved):
            result = LLMResult(
                request=call.request, status="budget_exceeded", request_hash=call.request_hash,
                model=call.model, error=budget.refusal,
            )
            recorder.record(_Outcome(call, result, store=False, copies=copies))  # reported, not stored
            return result
        async with gate.slot():
            stats.sent += 1
            result = await self._send_with_retries(call, sdk, gate, stats)
        # The recorder fills in call_id once the row is written; the batch waits for that at its end.
        recorder.record(_Outcome(call, result, reserved=reserved, copies=copies))
        return result

    async def _send_with_retries(self, call: _Call, sdk, gate: RateGate, stats: BatchStats) -> LLMResult:
        # The SDK's generic post(): its base URL, auth, headers and error types, but the body goes
        # out exactly as hashed (no per-field transformation, which costs CPU at high rates).
        path = ENDPOINT_PATHS[call.request.endpoint]
        options = {"headers": {"Authorization": openai.omit}} if not self.config.api_key else {}
        attempt_number, attempt_started = 0, time.perf_counter()
        retrying = self.retry_policy.async_retrying(
            describe=f"LLM {call.model} ({call.request_hash[:12]})", sleep=self._pause_everyone
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    if attempt_number > 1:
                        stats.retries += 1
                    wait = self._not_before - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    await gate.wait_turn(prompt_estimate=call.prompt_estimate, completion_tokens=call.completion_limit)
                    stats.http_attempts += 1
                    attempt_started = time.perf_counter()
                    response = await self._post(sdk, path, call.body, options)
        except _FinalStatus as failure:
            return self._failure(call, attempt_number, attempt_started, failure.message, failure.status)
        except TransientError as exc:  # the attempts are used up
            return self._failure(call, attempt_number, attempt_started, exc.args[0], exc.status)
        result = self._parse(call, response, attempt_number, time.perf_counter() - attempt_started)
        self.rate_controller.on_success(rate_limit_headers(response.headers), prompt_estimate=call.prompt_estimate,
                                        prompt_tokens=result.prompt_tokens)
        return result

    async def _post(self, sdk, path: str, body: dict, options: dict):
        """One HTTP attempt; failures are classified for the retry policy, 429s told to the rate
        controller."""
        try:
            return await sdk.post(path, cast_to=httpx.Response, body=body, options=options)
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status == 429:
                self.rate_controller.on_rate_limited(rate_limit_headers(exc.response.headers))
            if status in RETRYABLE_STATUSES or status >= 500:
                retry_after = retry_after_seconds(exc.response.headers)
                if retry_after is not None:  # at once: requests starting meanwhile wait too
                    pause = min(retry_after, self.config.retry_after_max)
                    self._not_before = max(self._not_before, time.monotonic() + pause)
                raise TransientError(_error_message(exc), status=status, retry_after=retry_after) from None
            raise _FinalStatus(_error_message(exc), status) from None
        except openai.APIConnectionError as exc:  # also timeouts
            raise TransientError(f"{type(exc).__name__}: {exc}") from None

    async def _pause_everyone(self, seconds: float) -> None:
        # A rate limit concerns every request to the server, not only this one: every attempt
        # waits for the shared pause before it starts.
        self._not_before = max(self._not_before, time.monotonic() + seconds)
        await asyncio.sleep(max(0.0, self._not_before - time.monotonic()))

    def _failure(self, call: _Call, attempts: int, started: float, error: str, http_status: int | None) -> LLMResult:
        return LLMResult(
            request=call.request, status="failed", request_hash=call.request_hash, model=call.model,
            attempts=attempts, latency_seconds=time.perf_counter() - started, http_status=http_status,
            error=error,
        )

    def _parse(self, call: _Call, response, attempts: int, latency: float) -> LLMResult:
        result = LLMResult(
            request=call.request, status="failed", request_hash=call.request_hash, model=call.model,
            attempts=attempts, latency_seconds=latency, http_status=response.status_code,
        )
        try:
            data = response.json()
        except ValueError:
            result.error = f"malformed response: not JSON: {response.text[:200]!r}"
            return result
        if not isinstance(data, dict):
            result.error = f"malformed response: expected a JSON object, got {type(data).__name__}"
            return result
        result.response = data
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        try:
            result.prompt_tokens = int(usage["prompt_tokens"]) if usage.get("prompt_tokens") is not None else None
            result.completion_tokens = (
                int(usage["completion_tokens"]) if usage.get("completion_tokens") is not None else None
            )
        except (TypeError, ValueError):
            result.prompt_tokens = result.completion_tokens = None
        result.cost_usd = self._cost(call, result)  # a broken answer may still have been billed
        if isinstance(data.get("error"), dict):
            result.error = f"error in a {response.status_code} response: {data['error'].get('message', data['error'])}"
            return result
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            result.error = "malformed response: no choices"
            return result
        try:
            if call.request.endpoint == "chat":
                message = choices[0].get("message")
                if not isinstance(message, dict):
                    raise ValueError("choice has no message")
                text = message_text(message.get("content"))
            else:
                text = choices[0].get("text")
                if not isinstance(text, str):
                    raise ValueError("choice has no text")
        except ValueError as exc:
            result.error = f"malformed response: {exc}"
            return result
        result.status = "ok"
        result.text = text
        if result.cost_usd is None and call.price is not None:
            # Answered but no usage reported: charge the worst case so the budget stays safe.
            result.cost_usd = call.max_cost
        return result

    @staticmethod
    def _cost(call: _Call, result: LLMResult) -> Decimal | None:
        if call.price is None or result.prompt_tokens is None or result.completion_tokens is None:
            return None
        return call.price.cost(result.prompt_tokens, result.completion_tokens)


class _FinalStatus(Exception):
    """An HTTP error status that another attempt would not fix."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message, self.status = message, status


async def _no_api_key() -> str:
    return ""


# ---- module-level conveniences (settings read at each call) -----------------------------------


def run_batch(
    requests: Iterable[LLMRequest],
    *,
    run: LLMRun | None = None,
    progress: Progress | None = None,
    client: LLMClient | None = None,
) -> BatchResults:
    return (client or LLMClient()).run_batch(requests, run=run, progress=progress)


def complete(
    prompt: str | RenderedPrompt,
    *,
    images: Sequence[ImageSource] = (),
    system: str | RenderedPrompt | None = None,
    model: str | None = None,
    purpose: str = "",
    run: LLMRun | None = None,
    client: LLMClient | None = None,
    **params,
) -> LLMResult:
    """One chat call; check ``result.ok`` or call ``result.raise_for_error()``."""
    request = chat_request(prompt, images=images, system=system, model=model, purpose=purpose, **params)
    return (client or LLMClient()).run_batch([request], run=run)[0]


def completion(
    prompt: str | RenderedPrompt,
    *,
    model: str | None = None,
    echo: bool = False,
    logprobs: int | None = None,
    purpose: str = "",
    run: LLMRun | None = None,
    client: LLMClient | None = None,
    **params,
) -> LLMResult:
    """One legacy completions call; ``echo=True, logprobs=k, max_tokens=0`` scores the prompt."""
    request = completion_request(prompt, model=model, echo=echo, logprobs=logprobs, purpose=purpose, **params)
    return (client or LLMClient()).run_batch([request], run=run)[0]


def configured_model(model: str | None = None, client: LLMClient | None = None) -> str:
    """The model that will answer; raises ``LLMNotConfigured`` naming the settings to set.

    Pipeline steps call it before writing anything, so a missing server leaves nothing behind.
    """
    config = client.config if client is not None else LLMConfig.from_settings()
    config.require_server()
    return config.resolve_model(model)
