"""Reads for metric agreement: the completed pairwise items with their texts and human majority."""
from __future__ import annotations

import pandas as pd

PAIR_COLUMNS = [
    "pair_id", "round_id", "instance_id", "language", "category", "model_a", "model_b",
    "output_a_id", "output_b_id", "text_a", "text_b", "reference", "against_reference",
    "human_winner", "majority", "votes",
]


def human_pairs(*, round_id: int | None = None) -> pd.DataFrame:
    """One row per completed pairwise item (``pair_id`` is the work item id), in item order.

    The human majority is the item's stored aggregate (winner a/b or tie, its size and the
    number of judgments): ``human_winner`` is "model_a", "model_b" or "tie", ``majority`` and
    ``votes`` give the agreement level. ``reference`` is the instance's human-verified reference
    (None when it has none); ``against_reference`` marks items whose side b is that reference.
    """
    from annotation.models import WorkItem
    from annotation.task_types import task_type_keys_yielding

    # Items of the types whose judgments are battles: two model outputs (or an output and a reference).
    items = (
        WorkItem.objects.filter(round__task_type__in=task_type_keys_yielding("battles"), completed_at__isnull=False,
                                aggregate_result__isnull=False)
        .select_related("output_a__instance__family", "output_a__instance__accepted_reference", "output_b", "reference")
        .order_by("round_id", "position")
    )
    if round_id is not None:
        items = items.filter(round_id=round_id)
    rows = []
    for item in items:
        instance = item.output_a.instance
        accepted = getattr(instance, "accepted_reference", None)
        aggregate = item.aggregate_result
        winner = aggregate.get("winner")
        rows.append({
            "pair_id": item.pk,
            "round_id": item.round_id,
            "instance_id": instance.pk,
            "language": instance.language,
            "category": instance.family.name,
            "model_a": item.side_a_name,
            "model_b": item.side_b_name,
            "output_a_id": item.output_a_id,
            "output_b_id": item.output_b_id,
            "text_a": item.output_a.text,
            "text_b": item.output_b.text if item.output_b_id else item.reference.text,
            "reference": accepted.text if accepted is not None else None,
            "against_reference": item.reference_id is not None,
            "human_winner": f"model_{winner}" if winner in ("a", "b") else "tie",
            "majority": int(aggregate.get("agreement") or 0),
            "votes": int(aggregate.get("judgments") or 0),
        })
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)
