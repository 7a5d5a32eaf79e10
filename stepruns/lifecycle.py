"""The one owner of ``StepRun.status``: queued → running → succeeded / failed / stopped.

Every change goes through ``begin``, ``take_over``, ``record_progress``, ``finish`` or ``fail``; each
moves the run along one edge of ``TRANSITIONS`` with a conditional update, so two processes cannot
both start the same run, and a change the table does not draw is refused with ``RunConflict`` (HTTP 409).

A running run's worker stamps ``heartbeat_at`` every ``STEP_RUN_HEARTBEAT_SECONDS``. A run whose
stamp is older than ``STEP_RUN_STALE_SECONDS`` lost its worker (killed, its host gone): ``take_over``
lets another worker carry it on (running → running), and only one can, since the update is conditional
on the old stamp.
"""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from .errors import RunConflict
from .models import StepRun

S = StepRun.Status

# event → (statuses it may start from, status it leads to)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "begin": (frozenset({S.QUEUED}), S.RUNNING),
    "take_over": (frozenset({S.RUNNING}), S.RUNNING),  # only when its worker stopped beating (stale)
    "succeed": (frozenset({S.RUNNING}), S.SUCCEEDED),
    "stop": (frozenset({S.RUNNING}), S.STOPPED),
    "fail": (frozenset({S.QUEUED, S.RUNNING}), S.FAILED),
}

MAX_FAILURES_KEPT = 200
MAX_MESSAGE_CHARACTERS = 500


def _move(run: StepRun, event: str, condition: Q | None = None, **fields) -> StepRun:
    sources, target = TRANSITIONS[event]
    rows = StepRun.objects.filter(pk=run.pk, status__in=sources)
    changed = (rows.filter(condition) if condition is not None else rows).update(status=target, **fields)
    if not changed:
        current = StepRun.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        held = " by a live worker" if current == S.RUNNING and event == "take_over" else ""
        raise RunConflict(f"step run {run.pk} is {current or 'gone'}{held}; it cannot {event.replace('_', ' ')}")
    run.refresh_from_db()
    return run


def stale_before():
    """Runs whose last heartbeat is older than this lost their worker."""
    return timezone.now() - timedelta(seconds=settings.STEP_RUN_STALE_SECONDS)


def stale_runs():
    """Running runs whose worker stopped beating."""
    return StepRun.objects.filter(status=S.RUNNING).filter(Q(heartbeat_at__lt=stale_before())
                                                           | Q(heartbeat_at__isnull=True))


def begin(run: StepRun) -> StepRun:
    """The worker takes the run: queued → running."""
    now = timezone.now()
    return _move(run, "begin", started_at=now, heartbeat_at=now, attempts=1)


def take_over(run: StepRun) -> StepRun:
    """Another worker carries on a run whose worker is gone (its heartbeat is stale): running → running.

    The counts start again (the new attempt announces and answers its own requests; answers stored
    before come back from the LLM cache at no cost), the cost spent so far is kept."""
    return _move(run, "take_over", Q(heartbeat_at__lt=stale_before()) | Q(heartbeat_at__isnull=True),
                 heartbeat_at=timezone.now(), attempts=F("attempts") + 1, done=0, total=0)


def heartbeat(run: StepRun) -> bool:
    """The run's worker is alive; False once the run is no longer running."""
    return bool(StepRun.objects.filter(pk=run.pk, status=S.RUNNING).update(heartbeat_at=timezone.now()))


def record_progress(run: StepRun, *, answered: int = 0, added: int = 0, cost_usd: Decimal = Decimal(0)) -> None:
    """Count answered requests, newly announced requests and their cost (only while running)."""
    changed = StepRun.objects.filter(pk=run.pk, status=S.RUNNING).update(
        done=F("done") + answered, total=F("total") + added, cost_usd=F("cost_usd") + cost_usd,
        heartbeat_at=timezone.now(),
    )
    if not changed:
        raise RunConflict(f"step run {run.pk} is not running; its progress is not recorded")


def clean_messages(messages: list[str]) -> list[str]:
    kept = [str(message)[:MAX_MESSAGE_CHARACTERS] for message in messages[:MAX_FAILURES_KEPT]]
    if len(messages) > MAX_FAILURES_KEPT:
        kept.append(f"… and {len(messages) - MAX_FAILURES_KEPT} more")
    return kept


def finish(run: StepRun, *, budget_reached: bool, summary: str, failures: list[str], cost_usd: Decimal,
           result: dict, llm_run_id: int | None) -> StepRun:
    """The step returned: running → succeeded, or → stopped when the budget cut it short."""
    return _move(
        run, "stop" if budget_reached else "succeed", finished_at=timezone.now(), summary=summary,
        failures=clean_messages(failures), cost_usd=cost_usd, result=result, llm_run_id=llm_run_id,
    )


def fail(run: StepRun, message: str) -> StepRun:
    """The step could not run or broke off: queued or running → failed, with the reason."""
    return _move(run, "fail", finished_at=timezone.now(), summary=str(message)[:MAX_MESSAGE_CHARACTERS])
