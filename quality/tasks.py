"""Celery task of quality control: ids in, a JSON-able report out; the service does the work."""
from __future__ import annotations

from celery import shared_task

from annotation.models import CollectionRound


@shared_task(name="quality.recompute_round_quality")
def recompute_round_quality_task(*, round_id: int) -> dict:
    from .services import recompute_round_quality

    quality = recompute_round_quality(round=CollectionRound.objects.get(pk=round_id))
    return {"round_id": round_id, "items": quality.items, "levels": quality.levels,
            "workers": quality.round.worker_quality.count()}
