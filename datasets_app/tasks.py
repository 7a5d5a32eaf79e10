"""Celery tasks for model outputs: ids in, a JSON-able report out; the services do the work."""
from __future__ import annotations

from celery import shared_task

from .model_outputs import generate_outputs, import_predictions
from .models import Instance


@shared_task(name="datasets_app.generate_outputs")
def generate_outputs_task(
    *, model: str, base_url: str | None = None, instance_ids: list[int] | None = None,
    output_name: str | None = None, budget_usd: str | None = None,
) -> dict:
    # The key for a separate candidate endpoint is not passed through the broker: such endpoints
    # are called without one here (use the command with --api-key-env for keyed ones).
    instances = None if instance_ids is None else Instance.objects.filter(pk__in=instance_ids).order_by("pk")
    report = generate_outputs(model=model, base_url=base_url, instances=instances, output_name=output_name,
                              budget_usd=budget_usd)
    return report.as_dict()


@shared_task(name="datasets_app.import_predictions")
def import_predictions_task(*, path: str, strict: bool = False) -> dict:
    return import_predictions(path=path, strict=strict).as_dict()
