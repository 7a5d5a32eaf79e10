"""The Celery tasks of background step runs: a run id in, the services do the work.

``acks_late``: the broker forgets the task only once it returned, so a worker killed mid-run (or its
host lost) leaves the task to be handed out again (at once when a pool process dies,
``reject_on_worker_lost``; after the broker's visibility timeout when the whole worker is gone). The
run's heartbeat then lets the next worker take it over (``stepruns.lifecycle``), and the LLM cache
keeps every answer already stored from being asked and paid for again.
"""
from __future__ import annotations

import logging

from celery import shared_task

from .errors import RunConflict
from .services import execute_run, resume_stale_runs

logger = logging.getLogger(__name__)


@shared_task(name="stepruns.execute_run", acks_late=True, reject_on_worker_lost=True)
def execute_run_task(*, run_id: int) -> dict:
    try:
        run = execute_run(run_id)
    except RunConflict as conflict:
        # A live worker holds the run (the task was handed out twice): it finishes it, not us.
        logger.info("%s", conflict.message)
        return {"run_id": run_id, "status": "held elsewhere"}
    return {"run_id": run.pk, "status": run.status}


@shared_task(name="stepruns.resume_stale_runs")
def resume_stale_runs_task() -> list[int]:
    """For a periodic schedule (celery beat); ``manage.py resume_step_runs`` does the same."""
    return resume_stale_runs()
