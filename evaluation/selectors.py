"""Reads for evaluation: IRR items for the rankers, stored model scores and crowd rankings as frames."""
from __future__ import annotations

import pandas as pd

from datasets_app.models import ReviewSet
from datasets_app.review_generation import image_source
from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem
from kernel.errors import ServiceError

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
    queryset = ReviewScore.objects.order_by("model_name", "ranker_kind", "review_id")
    if model is not None:
        queryset = queryset.filter(model_name=model)
    if ranker_kind is not None:
        queryset = queryset.filter(ranker_kind=ranker_kind)
    if item_ids is not None:
        queryset = queryset.filter(review__review_set_id__in=list(item_ids))
    rows = queryset.values_list("review__review_set_id", "model_name", "review__review_set__language", "review_id",
                                "score", "ranker_kind", "prompt_version")
    frame = pd.DataFrame(list(rows), columns=REVIEW_SCORE_COLUMNS)
    kinds = frame.groupby("model")["ranker_kind"].transform("nunique")
    several = (kinds > 1).to_numpy()
    if several.any():
        frame.loc[several, "model"] = frame.loc[several, "model"] + " (" + frame.loc[several, "ranker_kind"] + ")"
    return frame


class NoEvaluationData(ServiceError):
    """Nothing to evaluate: no judgments where they were looked for."""

    status_code = 404


class EvaluationRequestError(ServiceError):
    status_code = 400


def irr_rankings(*, round=None, project=None) -> pd.DataFrame:
    """Crowd rankings from the ranking task (rejected work excluded), in the IRR core's long format;
    ``project`` keeps its rounds' rankings only."""
    from annotation.selectors import ranking_judgments

    return ranking_judgments(round, project=project)[IRR_RANKING_COLUMNS].reset_index(drop=True)


def irr_inputs(*, round=None, project=None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """What ``irr.irr_report`` reads from the database: the crowd's rankings (with prompt ranks) and
    the stored model scores of the ranked review sets (None when there are none). The rankings may be
    empty; the callers say so in their own terms."""
    from stats import irr

    rankings = irr_rankings(round=round, project=project)
    if rankings.empty:
        return rankings, None
    # Only scores of items that have rankings: the core treats any other item as an error.
    scores = review_scores(item_ids=rankings[irr.ITEM].unique())
    return rankings, (scores[[*irr.MODEL_ID_COLUMNS, irr.SCORE]] if not scores.empty else None)


def irr_database_inputs(*, round=None, project=None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``irr_inputs``, refusing a round that is not a ranking round and an empty selection."""
    if round is not None and round.task_type_handler.yields != "rankings":
        raise EvaluationRequestError(f"round {round.pk} is a {round.task_type} round, not a ranking round")
    rankings, scores = irr_inputs(round=round, project=project)
    if rankings.empty:
        where = (f"round {round.pk}" if round is not None
                 else f"project '{project.slug}'" if project is not None else "the database")
        raise NoEvaluationData(f"{where} has no submitted rankings")
    return rankings, scores


def irr_database_report(*, round=None, project=None, threshold: float | None = None) -> dict:
    """The IRR report of the stored rankings and model scores, as JSON-ready data
    (``stats.irr.report_json``), as ``manage.py irr_report --from-db`` computes it."""
    from stats import irr

    threshold = irr.DEFAULT_THRESHOLD if threshold is None else threshold
    if not -1.0 <= threshold <= 1.0:
        raise EvaluationRequestError(f"the threshold must lie in [-1, 1], got {threshold}")
    rankings, model_scores = irr_database_inputs(round=round, project=project)
    try:
        return irr.report_json(irr.irr_report(rankings, model_scores, threshold=threshold))
    except irr.IRRInputError as error:
        raise EvaluationRequestError(error.describe()) from None


BATTLE_COLUMNS = ["model_a", "model_b", "winner", "category"]


HUMAN_ORIGINS = ("collected", "imported")


def human_battles(*, round_id: int | None = None, origin: str | None = None, project=None) -> pd.DataFrame:
    """Human pairwise judgments as battles (model_a, model_b, winner, category); ties impossible
    (forced choice). ``origin``: "collected" (judgments submitted in pairwise rounds, in submission
    order, the order online Elo replays), "imported" (published judgments imported from a file,
    in import order) or None for both, imported first. A round holds collected judgments only.
    ``project`` keeps the battles on that project's instances."""
    if origin is not None and origin not in HUMAN_ORIGINS:
        raise ValueError(f"unknown origin {origin!r}; choose one of {', '.join(HUMAN_ORIGINS)}")
    frames = []
    if origin in (None, "imported") and round_id is None:
        frames.append(imported_battles(project=project))
    if origin in (None, "collected"):
        frames.append(collected_battles(round_id=round_id, project=project))
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        return pd.DataFrame(columns=BATTLE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def collected_battles(*, round_id: int | None = None, project=None, columns=BATTLE_COLUMNS) -> pd.DataFrame:
    """Judgments submitted in pairwise rounds, in submission order (``columns`` of annotation's
    ``pairwise_battles``)."""
    from annotation.models import CollectionRound
    from annotation.selectors import pairwise_battles

    round_ = CollectionRound.objects.get(pk=round_id) if round_id is not None else None
    frame = pairwise_battles(round_, project=project)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    return frame.sort_values("submitted_at", kind="stable")[list(columns)].reset_index(drop=True)


IMPORTED_COLUMNS = [*BATTLE_COLUMNS, "instance_id"]


def imported_battles(*, project=None, columns=BATTLE_COLUMNS) -> pd.DataFrame:
    """Published human judgments imported from a file (``ImportedPreference``), in import order;
    ``columns`` among ``IMPORTED_COLUMNS``."""
    from .models import ImportedPreference

    queryset = ImportedPreference.objects.order_by("pk")
    if project is not None:
        queryset = queryset.filter(instance__family__project=project)
    rows = queryset.values_list("model_a", "model_b", "winner", "instance__family__name", "instance_id")
    return pd.DataFrame(list(rows), columns=IMPORTED_COLUMNS)[list(columns)]


def judged_battles(
    *, judge_model: str | None = None, with_reference: bool | None = None, models=None, project=None
) -> pd.DataFrame:
    """Battles judged by the LLM judge, in the order they were stored: (model_a, model_b, winner,
    category), ties included. Filter by judge model, reference mode, the models on both sides, or
    the project of the judged instances."""
    from .models import JudgedBattle

    queryset = JudgedBattle.objects.order_by("pk")
    if project is not None:
        queryset = queryset.filter(instance__family__project=project)
    if judge_model is not None:
        queryset = queryset.filter(judge_model=judge_model)
    if with_reference is not None:
        queryset = queryset.filter(with_reference=with_reference)
    if models is not None:
        queryset = queryset.filter(model_a__in=list(models), model_b__in=list(models))
    rows = queryset.values_list("model_a", "model_b", "winner", "instance__family__name")
    return pd.DataFrame(list(rows), columns=BATTLE_COLUMNS)


BATTLE_SOURCES = ("human", "judge")


def battles(*, source: str = "human", round_id: int | None = None, origin: str | None = None,
            project=None) -> pd.DataFrame:
    """Battles of one source (human judgments or the LLM judge's) for the ratings; the sources are
    never mixed. ``origin`` selects collected or imported human judgments (default: both);
    ``project`` keeps one project's battles."""
    if source == "human":
        return human_battles(round_id=round_id, origin=origin, project=project)
    if source == "judge":
        if round_id is not None:
            raise ValueError("judged battles do not belong to a crowd round")
        if origin is not None:
            raise ValueError("judged battles have no origin; it selects human judgments")
        return judged_battles(project=project)
    raise ValueError(f"unknown battle source {source!r}; choose one of {', '.join(BATTLE_SOURCES)}")


def database_ratings(*, source: str = "human", round=None, project=None, method: str = "elo",
                     bootstrap: int | None = None, seed: int = 0, anchor: tuple[str, float] | None = None,
                     reference: str | None = None, origin: str | None = None):
    """Ratings (``stats.ratings.RatingsResult``) of the stored battles of one source, as
    ``manage.py ratings --from-db`` computes them; refuses what cannot be rated with a message."""
    from stats.ratings import compute_ratings, encode_battles

    if source not in BATTLE_SOURCES:
        raise EvaluationRequestError(f"unknown battle source {source!r}; choose one of {', '.join(BATTLE_SOURCES)}")
    if round is not None and source != "human":
        raise EvaluationRequestError("a round selects crowd judgments: it goes with source human")
    if round is not None and round.task_type_handler.yields != "battles":
        raise EvaluationRequestError(f"round {round.pk} is a {round.task_type} round, not a pairwise round")
    if bootstrap is not None and bootstrap < 1:
        raise EvaluationRequestError("bootstrap must be at least 1")
    if origin is not None and source != "human":
        raise EvaluationRequestError("origin selects human judgments: it goes with source human")
    if origin is not None and origin not in HUMAN_ORIGINS:
        raise EvaluationRequestError(f"unknown origin {origin!r}; choose one of {', '.join(HUMAN_ORIGINS)}")
    frame = battles(source=source, round_id=round.pk if round is not None else None, origin=origin,
                    project=project)
    where = (f"round {round.pk}" if round is not None
             else f"project '{project.slug}'" if project is not None else "the database")
    if frame.empty:
        kind = "pairwise judgments" if source == "human" else "battles judged by the LLM judge"
        raise NoEvaluationData(f"no {kind} in {where}")
    encoded = encode_battles(frame)
    for name, model in (("anchor", anchor[0] if anchor else None), ("reference", reference)):
        if model is not None and model not in encoded.models:
            raise EvaluationRequestError(f"{name}: model {model!r} does not appear in {where}")
    return compute_ratings(encoded, method=method, bootstrap=bootstrap, seed=seed, anchor=anchor,
                           reference=reference)
