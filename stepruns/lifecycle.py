"""The one owner of ``StepRun.status``: queued → running → succeeded / failed / stopped.

Every change goes through ``begin``, ``take_over``, ``record_progress``, ``finish`` or ``fail``; each
moves the run along one edge of ``STEP_RUN_STATUS`` (declared beside the model) with a conditional
update, so two processes cannot both start the same run, and a change the table does not draw is
refused with ``RunConflict`` (HTTP 409).

A running run's worker stamps ``heartbeat_at`` every ``STEP_RUN_HEARTBEAT_SECONDS``. A run whose
stamp is older than ``STEP_RUN_STALE_SECONDS`` lost its worker (killed, its host gone): ``take_over``
lets another worker carry it on (running → running), and only one can, since the update is conditional
on the old stamp.

It owns the run's counters too. The cost is never added up here: every attempt charges the run's own
``LLMRun`` (opened by ``begin``), and each change copies what that run's calls were charged, which the
LLM layer stores in the transaction that stores the calls. An answer stored just before a worker died
is in it even though its progress was never counted, and the cache hit that replaces it on the next
attempt adds nothing.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from djangokit import transitions
from llm.models import LLMRun
from llm.services import create_run

from .errors import RunConflict
from .models import STEP_RUN_STATUS, StepRun

S = StepRun.Status

MAX_FAILURES_KEPT = 200
MAX_MESSAGE_CHARACTERS = 500


def _move(run: StepRun, event: str, condition: Q | None = None, **fields) -> StepRun:
    try:
        transitions.move(run, STEP_RUN_STATUS, event, where=condition, **fields)
    except RunConflict as refused:
        if refused.current == S.RUNNING and event == "take_over":
            raise RunConflict(f"step run {run.pk} is running by a live worker; it cannot take over") from None
        raise
    run.refresh_from_db()
    return run


def _cost_paid():
    """The run's cost as an update expression: what its ``LLMRun``'s calls were charged, every attempt's
    (``spent_usd``, the sum of the calls' costs, written with them). A run without one keeps its figure."""
    spent = LLMRun.objects.filter(pk=OuterRef("llm_run_id")).values("spent_usd")[:1]
    return Coalesce(Subquery(spent), F("cost_usd"))


def _open_llm_run(run: StepRun) -> None:
    """The ``LLMRun`` every attempt of the run charges, capped by the run's budget."""
    llm_run = create_run(name=f"step run {run.pk} ({run.kind})", budget_usd=run.budget_usd, purpose=run.kind)
    StepRun.objects.filter(pk=run.pk, llm_run__isnull=True).update(llm_run=llm_run)
    run.refresh_from_db()


def stale_before():
    """Runs whose last heartbeat is older than this lost their worker."""
    return timezone.now() - timedelta(seconds=settings.STEP_RUN_STALE_SECONDS)


def stale_runs():
    """Running runs whose worker stopped beating."""
    return StepRun.objects.filter(status=S.RUNNING).filter(Q(heartbeat_at__lt=stale_before())
                                                           | Q(heartbeat_at__isnull=True))


def begin(run: StepRun) -> StepRun:
    """The worker takes the run: queued → running, with the ``LLMRun`` its attempts charge."""
    now = timezone.now()
    with transaction.atomic():
        run = _move(run, "begin", started_at=now, heartbeat_at=now, attempts=1)
        if run.llm_run_id is None:
            _open_llm_run(run)
    return run


def take_over(run: StepRun) -> StepRun:
    """Another worker carries on a run whose worker is gone (its heartbeat is stale): running → running.

    The counts start again (the new attempt announces and answers its own requests; answers stored
    before come back from the LLM cache at no cost). The cost is what the run's calls were charged,
    the answers the lost worker stored without counting them included; the new attempt charges the
    same ``LLMRun``, so its budget cap covers what was spent before."""
    with transaction.atomic():
        run = _move(run, "take_over", Q(heartbeat_at__lt=stale_before()) | Q(heartbeat_at__isnull=True),
                    heartbeat_at=timezone.now(), attempts=F("attempts") + 1, done=0, total=0, cost_usd=_cost_paid())
        if run.llm_run_id is None:  # begun before runs had one
            _open_llm_run(run)
    return run


def heartbeat(run: StepRun) -> bool:
    """The run's worker is alive; False once the run is no longer running."""
    return bool(StepRun.objects.filter(pk=run.pk, status=S.RUNNING).update(heartbeat_at=timezone.now()))


def record_progress(run: StepRun, *, answered: int = 0, added: int = 0) -> None:
    """Count answered requests and newly announced requests, and bring the cost up to what the run's
    calls were charged (only while running)."""
    changed = StepRun.objects.filter(pk=run.pk, status=S.RUNNING).update(
        done=F("done") + answered, total=F("total") + added, cost_usd=_cost_paid(), heartbeat_at=timezone.now(),
    )
    if not changed:
        raise RunConflict(f"step run {run.pk} is not running; its progress is not recorded")


def clean_messages(messages: list[str]) -> list[str]:
    kept = [str(message)[:MAX_MESSAGE_CHARACTERS] for message in messages[:MAX_FAILURES_KEPT]]
    if len(messages) > MAX_FAILURES_KEPT:
        kept.append(f"… and {len(messages) - MAX_FAILURES_KEPT} more")
    return kept


def finish(run: StepRun, *, budget_reached: bool, summary: str, failures: list[str], result: dict) -> StepRun:
    """The step returned: running → succeeded, or → stopped when the budget cut it short."""
    return _move(
        run, "stop" if budget_reached else "succeed", finished_at=timezone.now(), summary=summary,
        failures=clean_messages(failures), cost_usd=_cost_paid(), result=result,
    )


def fail(run: StepRun, message: str) -> StepRun:
    """The step could not run or broke off: queued or running → failed, with the reason."""
    return _move(run, "fail", finished_at=timezone.now(), summary=str(message)[:MAX_MESSAGE_CHARACTERS],
                 cost_usd=_cost_paid())
