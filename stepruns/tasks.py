"""The Celery task of background step runs: a run id in, the services do the work."""
from __future__ import annotations

from celery import shared_task

from .services import execute_run


@shared_task(name="stepruns.execute_run")
def execute_run_task(*, run_id: int) -> dict:
    run = execute_run(run_id)
    return {"run_id": run.pk, "status": run.status}
