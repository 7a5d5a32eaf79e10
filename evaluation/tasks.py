"""The Celery task that recomputes a project's stored results: a project id in, the service does the work."""
from __future__ import annotations

from celery import shared_task

from projects.models import Project


@shared_task(name="evaluation.refresh_results")
def refresh_results_task(*, project_id: int, force: bool = False) -> dict:
    from .stored_results import refresh_results

    project = Project.objects.filter(pk=project_id).first()
    if project is None:  # deleted since the task was queued
        return {"project_id": project_id, "views": 0}
    stored = refresh_results(project=project, force=force)
    return {"project_id": project_id, "views": len(stored),
            "judgments": {f"{row.kind}:{row.key}": row.judgment_count for row in stored}}
