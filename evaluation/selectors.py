"""Reads for evaluation: IRR items for the rankers, stored model scores and crowd rankings as frames."""
from __future__ import annotations

import pandas as pd

from datasets_app.models import ReviewSet
from datasets_app.review_generation import image_source
from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem

from .models import ReviewScore

# The columns of the crowd rankings the IRR core reads (annotation's selector has more).
IRR_RANKING_COLUMNS = ["item_id", "annotator_id", "review_id", "rank", "prompt_rank", "language"]
REVIEW_SCORE_COLUMNS = [*SCORE_COLUMNS, "ranker_kind", "prompt_version"]


def review_items(*, language: str | None = None, review_set_ids=None) -> list[ReviewItem]:
    """Review sets as ranker items: item_id is the review set id, review ids are Review ids, the
    reviews in prompt-rank order; the image is our stored file (sent as a data URL) or its URL."""
    queryset = ReviewSet.objects.select_related("image").prefetch_related("reviews").order_by("pk")
    if language is not None:
        queryset = queryset.filter(language=language)
    if review_set_ids is not None:
        queryset = queryset.filter(pk__in=list(review_set_ids))
    items = []
    for review_set in queryset:
        reviews = sorted(review_set.reviews.all(), key=lambda review: review.prompt_rank)
        if len(reviews) < 2:
            continue  # nothing to rank
        items.append(ReviewItem(
            item_id=str(review_set.pk), language=review_set.language,
            reviews=[(str(review.pk), review.text) for review in reviews],
            image_url=image_source(review_set.image), category=review_set.category,
        ))
    return items


def review_scores(*, model: str | None = None, ranker_kind: str | None = None, item_ids=None) -> pd.DataFrame:
    """Stored model scores in the score-table shape (item_id = review set id, review_id = Review id).

    ``model`` is the model name, or ``"name (kind)"`` when one name was scored by several rankers,
    so the two never merge into one model in a report.
    """
    queryset = ReviewScore.objects.select_related("review__review_set").order_by("model_name", "ranker_kind", "review_id")
    if model is not None:
        queryset = queryset.filter(model_name=model)
    if ranker_kind is not None:
        queryset = queryset.filter(ranker_kind=ranker_kind)
    if item_ids is not None:
        queryset = queryset.filter(review__review_set_id__in=list(item_ids))
    rows = [
        (score.review.review_set_id, score.model_name, score.review.review_set.language, score.review_id,
         score.score, score.ranker_kind, score.prompt_version)
        for score in queryset
    ]
    frame = pd.DataFrame(rows, columns=REVIEW_SCORE_COLUMNS)
    kinds = frame.groupby("model")["ranker_kind"].transform("nunique")
    several = (kinds > 1).to_numpy()
    if several.any():
        frame.loc[several, "model"] = frame.loc[several, "model"] + " (" + frame.loc[several, "ranker_kind"] + ")"
    return frame


def irr_rankings(*, round=None, project=None) -> pd.DataFrame:
    """Crowd rankings from the ranking task (rejected work excluded), in the IRR core's long format;
    ``project`` keeps its rounds' rankings only."""
    from annotation.selectors import ranking_judgments

    return ranking_judgments(round, project=project)[IRR_RANKING_COLUMNS].reset_index(drop=True)


def irr_inputs(*, round=None, project=None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """What ``irr.irr_report`` reads from the database: the crowd's rankings (with prompt ranks) and
    the stored model scores of the ranked review sets (None when there are none). The rankings may be
    empty; the callers say so in their own terms."""
    from evaluation.core import irr

    rankings = irr_rankings(round=round, project=project)
    if rankings.empty:
        return rankings, None
    # Only scores of items that have rankings: the core treats any other item as an error.
    scores = review_scores(item_ids=rankings[irr.ITEM].unique())
    return rankings, (scores[[*irr.MODEL_ID_COLUMNS, irr.SCORE]] if not scores.empty else None)


BATTLE_COLUMNS = ["model_a", "model_b", "winner", "category"]


def human_battles(*, round_id: int | None = None, project=None) -> pd.DataFrame:
    """Human pairwise judgments as battles (model_a, model_b, winner, category) in submission
    order, the order online Elo replays; one judgment per row, ties impossible (forced choice).
    ``project`` keeps the judgments of its rounds only."""
    from annotation.models import CollectionRound
    from annotation.selectors import pairwise_battles

    round_ = CollectionRound.objects.get(pk=round_id) if round_id is not None else None
    frame = pairwise_battles(round_, project=project)
    if frame.empty:
        return pd.DataFrame(columns=BATTLE_COLUMNS)
    return frame.sort_values("submitted_at", kind="stable")[BATTLE_COLUMNS].reset_index(drop=True)


def judged_battles(
    *, judge_model: str | None = None, with_reference: bool | None = None, models=None, project=None
) -> pd.DataFrame:
    """Battles judged by the LLM judge, in the order they were stored: (model_a, model_b, winner,
    category), ties included. Filter by judge model, reference mode, the models on both sides, or
    the project whose instances were judged."""
    from .models import JudgedBattle

    queryset = JudgedBattle.objects.select_related("instance__family").order_by("pk")
    if project is not None:
        queryset = queryset.filter(instance__family__project=project)
    if judge_model is not None:
        queryset = queryset.filter(judge_model=judge_model)
    if with_reference is not None:
        queryset = queryset.filter(with_reference=with_reference)
    if models is not None:
        queryset = queryset.filter(model_a__in=list(models), model_b__in=list(models))
    rows = [(b.model_a, b.model_b, b.winner, b.instance.family.name) for b in queryset]
    return pd.DataFrame(rows, columns=BATTLE_COLUMNS)


BATTLE_SOURCES = ("human", "judge")


def battles(*, source: str = "human", round_id: int | None = None, project=None) -> pd.DataFrame:
    """Battles of one source (human judgments or the LLM judge's) for the ratings; the sources are
    never mixed. ``project`` keeps that project's battles only."""
    if source == "human":
        return human_battles(round_id=round_id, project=project)
    if source == "judge":
        if round_id is not None:
            raise ValueError("judged battles do not belong to a crowd round")
        return judged_battles(project=project)
    raise ValueError(f"unknown battle source {source!r}; choose one of {', '.join(BATTLE_SOURCES)}")
