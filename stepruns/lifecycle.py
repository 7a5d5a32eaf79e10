"""The one owner of ``StepRun.status``: queued → running → succeeded / failed / stopped.

Every change goes through ``begin``, ``record_progress``, ``finish`` or ``fail``; each moves the run
along one edge of ``TRANSITIONS`` with a conditional update, so two processes cannot both start the
same run, and a change the table does not draw is refused with ``RunConflict`` (HTTP 409).
"""
from __future__ import annotations

from decimal import Decimal

from django.db.models import F
from django.utils import timezone

from .errors import RunConflict
from .models import StepRun

S = StepRun.Status

# event → (statuses it may start from, status it leads to)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "begin": (frozenset({S.QUEUED}), S.RUNNING),
    "succeed": (frozenset({S.RUNNING}), S.SUCCEEDED),
    "stop": (frozenset({S.RUNNING}), S.STOPPED),
    "fail": (frozenset({S.QUEUED, S.RUNNING}), S.FAILED),
}

MAX_FAILURES_KEPT = 200
MAX_MESSAGE_CHARACTERS = 500


def _move(run: StepRun, event: str, **fields) -> StepRun:
    sources, target = TRANSITIONS[event]
    changed = StepRun.objects.filter(pk=run.pk, status__in=sources).update(status=target, **fields)
    if not changed:
        current = StepRun.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        raise RunConflict(f"step run {run.pk} is {current or 'gone'}; it cannot {event}")
    run.refresh_from_db()
    return run


def begin(run: StepRun) -> StepRun:
    """The worker takes the run: queued → running."""
    return _move(run, "begin", started_at=timezone.now())


def record_progress(run: StepRun, *, answered: int = 0, added: int = 0, cost_usd: Decimal = Decimal(0)) -> None:
    """Count answered requests, newly announced requests and their cost (only while running)."""
    changed = StepRun.objects.filter(pk=run.pk, status=S.RUNNING).update(
        done=F("done") + answered, total=F("total") + added, cost_usd=F("cost_usd") + cost_usd,
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
