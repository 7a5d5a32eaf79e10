"""A project's results as the cockpit shows and serves them: the leaderboard and the IRR report.

Both are the cores' own results (``compute_ratings`` / ``RatingsResult.to_dict`` and ``plot_ratings``
as in ``manage.py ratings``; ``irr.irr_report`` / ``report_json`` and ``plot_sweep`` as in
``manage.py irr_report``), read from the project's data only. Each result is a JSON-ready dict (the
page renders it and the download is it) plus its PNG plots. The pages' defaults are stored and
served from storage (``evaluation.stored_results``); other parameters are computed here on request,
cached per parameters and per content of the data read.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import pandas as pd
from django.conf import settings
from django.core.cache import cache

from kernel.errors import ServiceError
from stats import irr
from stats.ratings import InvalidBattlesError, compute_ratings, plot_category_win_rates, plot_ratings

from .selectors import BATTLE_SOURCES, battles, irr_inputs

METHODS = {"elo": "Online Elo", "bt": "Bradley–Terry"}
SOURCES = {"human": "Crowd judgments", "judge": "LLM judge"}
# Bootstrap rounds of the page (kept small for its speed) and the most a download may ask for.
PAGE_BOOTSTRAP_ROUNDS = 200
MAX_BOOTSTRAP_ROUNDS = 5000
CACHE_SECONDS = 3600
assert set(SOURCES) == set(BATTLE_SOURCES)


class ResultsError(ServiceError):
    """The results cannot be computed with these parameters."""

    status_code = 400


class NoResults(ServiceError):
    """There is nothing to compute results from yet."""

    status_code = 404


@dataclass(frozen=True)
class Result:
    """A JSON-ready ``data`` dict and its plots as PNG bytes by name (empty when there is no data)."""

    data: dict
    plots: dict[str, bytes]

    def plot(self, name: str) -> bytes:
        if name not in self.plots:
            raise NoResults(f"No plot {name[:40]!r} for these results; plots: {', '.join(self.plots) or 'none yet'}.")
        return self.plots[name]


def input_digest(*frames: pd.DataFrame | None) -> str:
    """SHA-256 of the tables read: their columns, and each row's content in order."""
    digest = hashlib.sha256()
    for frame in frames:
        if frame is None:
            digest.update(b"-")
            continue
        digest.update(repr((list(frame.columns), len(frame))).encode("utf-8"))
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _cached(key: str, compute) -> Result:
    result = cache.get(key)
    if result is None:
        result = compute()
        cache.set(key, result, CACHE_SECONDS)
    return result


def check_leaderboard_parameters(*, source: str, method: str, bootstrap: int) -> None:
    if source not in SOURCES:
        raise ResultsError(f"source: choose one of {', '.join(SOURCES)}.")
    if method not in METHODS:
        raise ResultsError(f"method: choose one of {', '.join(METHODS)}.")
    if not 1 <= bootstrap <= MAX_BOOTSTRAP_ROUNDS:
        raise ResultsError(f"bootstrap: between 1 and {MAX_BOOTSTRAP_ROUNDS} rounds.")


def leaderboard(*, project, source: str = "human", method: str = "elo",
                bootstrap: int = PAGE_BOOTSTRAP_ROUNDS, seed: int = 0) -> Result:
    """Ratings of the project's battles of one source (never mixed): rating with its bootstrap
    interval, rank, battles, win rate against the human-verified reference when it played, per-category
    win rates; plots ``ratings`` and ``categories``."""
    check_leaderboard_parameters(source=source, method=method, bootstrap=bootstrap)
    frame = battles(source=source, project=project)
    key = f"results:leaderboard:{project.pk}:{source}:{method}:{bootstrap}:{seed}:{input_digest(frame)}"
    return _cached(key, lambda: leaderboard_result(frame, project=project, source=source, method=method,
                                                   bootstrap=bootstrap, seed=seed))


def leaderboard_result(frame: pd.DataFrame, *, project, source: str, method: str, bootstrap: int, seed: int) -> Result:
    """The leaderboard of a battle table, uncached (``leaderboard`` reads the table and caches this)."""
    context = {"project": project.slug, "source": source, "battle_count": len(frame)}
    if frame.empty:
        return Result(data={**context, "method": method, "bootstrap_rounds": bootstrap, "seed": seed,
                            "reference": None, "models": []}, plots={})
    reference = settings.ANNOTATION_REFERENCE_SIDE_NAME
    models = set(frame["model_a"]) | set(frame["model_b"])
    try:
        result = compute_ratings(frame, method=method, bootstrap=bootstrap, seed=seed,
                                 reference=reference if reference in models else None)
    except InvalidBattlesError as error:
        raise ResultsError(f"The project's {source} battles cannot be rated: {error}") from None
    title = f"{METHODS[method]}, {SOURCES[source].lower()}: {len(frame)} battles\n" \
            f"95 % bootstrap interval, {bootstrap} rounds"
    plots = {"ratings": _png(plot_ratings(result, title=title))}
    if result.category_win_rates is not None:
        plots["categories"] = _png(plot_category_win_rates(result))
    return Result(data={**context, **result.to_dict()}, plots=plots)


def category_table(data: dict) -> dict | None:
    """The per-category win rates of a leaderboard as rows: {"models": [...], "rows": [{"category",
    "rates": [...] in the models' order}]}; None without categories."""
    per_category = data.get("category_win_rates")
    if not per_category:
        return None
    models = [row["model"] for row in data["models"] if row["model"] in next(iter(per_category.values()))]
    return {"models": models, "rows": [{"category": category, "rates": [rates.get(model) for model in models]}
                                       for category, rates in per_category.items()]}


def check_threshold(threshold: float) -> None:
    if not -1.0 <= threshold <= 1.0:
        raise ResultsError(f"threshold: between -1 and 1, not {threshold}.")


def irr_results(*, project, threshold: float = irr.DEFAULT_THRESHOLD) -> Result:
    """The IRR report of the project's ranking rounds against the stored model scores: items with
    their best pair and keep decision, threshold sweep (per language), model rho per language, the
    human reference; plot ``sweep``."""
    check_threshold(threshold)
    rankings, scores = irr_inputs(project=project)
    key = f"results:irr:{project.pk}:{threshold!r}:{input_digest(rankings, scores)}"
    return _cached(key, lambda: irr_result(rankings, scores, project=project, threshold=threshold))


def irr_result(rankings: pd.DataFrame, scores: pd.DataFrame | None, *, project, threshold: float) -> Result:
    """The IRR report of the tables read, uncached (``irr_results`` reads them and caches this)."""
    if rankings.empty:
        return Result(data={"project": project.slug, "threshold": threshold, "summary": None, "items": []}, plots={})
    try:
        report = irr.irr_report(rankings, scores, threshold=threshold)
    except irr.IRRInputError as error:
        raise ResultsError(error.describe()) from None
    return Result(data={"project": project.slug, **irr.report_json(report)},
                  plots={"sweep": _png(irr.plot_sweep(report))})
