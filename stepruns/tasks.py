"""The Celery tasks of background step runs: a run id in, the services do the work.

``acks_late``: the broker forgets the task only once it returned, so a worker killed mid-run (or its
host lost) leaves the task to be handed out again (at once when a pool process dies,
``reject_on_worker_lost``; when the whole worker is gone, after Redis's visibility timeout, or at
once with RabbitMQ). The run's heartbeat then lets the next worker take it over
(``stepruns.lifecycle``); a copy that arrives while the heartbeat is still fresh asks again later.
The LLM cache keeps every answer already stored from being asked and paid for again.
"""
from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from .errors import RunConflict
from .services import execute_run, resume_stale_runs

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="stepruns.execute_run", acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_run_task(self, *, run_id: int) -> dict:
    try:
        run = execute_run(run_id)
    except RunConflict as conflict:
        # A live worker holds the run: this copy of the task was handed out early (RabbitMQ does so
        # as soon as a worker's connection drops, before its run's heartbeat is stale). Look again
        # once the holder would count as gone: then the run is finished, or this worker takes it over.
        logger.info("%s; asking again in %g s", conflict.message, settings.STEP_RUN_STALE_SECONDS)
        if self.request.is_eager:  # in-process: nobody else will finish it later
            return {"run_id": run_id, "status": "held elsewhere"}
        raise self.retry(countdown=settings.STEP_RUN_STALE_SECONDS) from None
    return {"run_id": run.pk, "status": run.status}


@shared_task(name="stepruns.resume_stale_runs")
def resume_stale_runs_task() -> list[int]:
    """For a periodic schedule (celery beat); ``manage.py resume_step_runs`` does the same."""
    return resume_stale_runs()
