"""Writes for evaluation: IRR model scores."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from django.db import transaction

from datasets_app.models import Review, ReviewSet
from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem, ReviewRanker, Unscored

from .models import RankerKind, ReviewScore
from .stored_results import judgments_changed_on_commit


class ScoreStoreError(ValueError):
    """Scores that do not fit the stored reviews; nothing was written."""


@transaction.atomic
def store_review_scores(*, frame: pd.DataFrame, ranker_kind: str, prompt_version: str = "") -> int:
    """Store a score table (item_id = review set id, review_id = Review id); a score already stored for
    the same review, model and ranker kind is replaced. Returns the number of rows written."""
    if ranker_kind not in RankerKind.values:
        raise ScoreStoreError(f"unknown ranker kind {ranker_kind!r}")
    missing = [column for column in SCORE_COLUMNS if column not in frame.columns]
    if missing:
        raise ScoreStoreError(f"score table lacks column(s): {', '.join(missing)}")
    if frame.empty:
        return 0
    try:
        review_ids = [int(value) for value in frame["review_id"]]
        item_ids = [int(value) for value in frame["item_id"]]
    except (TypeError, ValueError) as exc:
        raise ScoreStoreError(f"review and item ids must be database ids ({exc})") from None
    owner = dict(Review.objects.filter(pk__in=review_ids).values_list("pk", "review_set_id"))
    for position, (item_id, review_id) in enumerate(zip(item_ids, review_ids)):
        if review_id not in owner:
            raise ScoreStoreError(f"row {position + 1}: no review with id {review_id}")
        if owner[review_id] != item_id:
            raise ScoreStoreError(f"row {position + 1}: review {review_id} belongs to review set "
                                  f"{owner[review_id]}, not {item_id}")
    rows = [
        ReviewScore(review_id=review_id, model_name=str(model), ranker_kind=ranker_kind, score=float(score),
                    prompt_version=prompt_version)
        for review_id, model, score in zip(review_ids, frame["model"], frame["score"])
    ]
    for row in rows:
        row.full_clean(exclude=["review"], validate_unique=False, validate_constraints=False)
    ReviewScore.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["review", "model_name", "ranker_kind"],
        update_fields=["score", "prompt_version", "updated_at"],
    )
    # The IRR results of the review sets' projects read these scores.
    for project_id in set(ReviewSet.objects.filter(pk__in=set(owner.values())).values_list("project_id", flat=True)):
        judgments_changed_on_commit(project_id=project_id)
    return len(rows)


@dataclass
class RankingOutcome:
    scores: pd.DataFrame
    stored: int
    unscored: list[Unscored] = field(default_factory=list)


def rank_and_store(*, ranker: ReviewRanker, ranker_kind: str, items: list[ReviewItem]) -> RankingOutcome:
    """Run a ranker over the items and store what it scored (items it could not score are listed)."""
    scores = ranker.score_items(items)
    version = getattr(ranker, "prompt_version", "") or ""
    if isinstance(version, int):  # the local ranker numbers its perplexity prefix
        version = f"perplexity-prefix@{version}"
    stored = store_review_scores(frame=scores, ranker_kind=ranker_kind, prompt_version=str(version))
    return RankingOutcome(scores=scores, stored=stored, unscored=list(getattr(ranker, "unscored", [])))
