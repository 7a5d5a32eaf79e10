"""Celery tasks of the VisIT-Bench pipeline: ids in, a JSON-able report out, the services do the work.

Without ``CELERY_BROKER_URL`` they run in-process (eagerly); with a Redis broker, in a worker.
"""
from __future__ import annotations

import logging

from celery import shared_task

from datasets_app.models import Instance
from datasets_app.reference_generation import instances_awaiting_reference
from llm.config import LLMNotConfigured

from . import pipeline
from .models import CollectionRound

logger = logging.getLogger(__name__)


def _round(round_id: int | None) -> CollectionRound | None:
    return None if round_id is None else CollectionRound.objects.get(pk=round_id)


@shared_task(name="annotation.generate_references")
def generate_references_task(
    *, instance_ids: list[int] | None = None, model: str | None = None, budget_usd: str | None = None,
    verification_round_id: int | None = None,
) -> dict:
    """Reference candidates for instances awaiting one, each routed to a verification item."""
    try:
        report = pipeline.generate_and_route_references(
            instances=None if instance_ids is None else instances_awaiting_reference(instance_ids=instance_ids),
            model=model, budget_usd=budget_usd, verification_round=_round(verification_round_id),
        )
    except LLMNotConfigured as error:
        # Started automatically after a caption: say what to set instead of retrying forever.
        logger.error("reference generation for %s not run: %s", instance_ids or "all instances", error)
        return {"error": str(error), "instance_ids": instance_ids}
    return report.as_dict()


@shared_task(name="annotation.regenerate_references")
def regenerate_references_task(
    *, reasons: list[str] | None = None, instance_ids: list[int] | None = None, model: str | None = None,
    budget_usd: str | None = None, verification_round_id: int | None = None,
) -> dict:
    report = pipeline.regenerate_discarded(
        reasons=reasons or [Instance.DiscardReason.RESPONSE], instance_ids=instance_ids, model=model,
        budget_usd=budget_usd, verification_round=_round(verification_round_id),
    )
    return report.as_dict()


@shared_task(name="annotation.recaption_discarded")
def recaption_discarded_task(*, reasons: list[str] | None = None, instance_ids: list[int] | None = None,
                             workers_per_item: int = 1, open: bool = True) -> dict:
    report = pipeline.recaption_discarded(
        reasons=reasons or [Instance.DiscardReason.CAPTION], instance_ids=instance_ids,
        workers_per_item=workers_per_item, open=open,
    )
    return {"round_id": report.round.pk if report.round else None, "instance_ids": report.instance_ids}
