"""Agreement of automatic metrics with human pairwise majorities (VisIT-Bench §3.4, Figure 9).

Per pair of model outputs, humans give a majority winner at an agreement level (5/5, 4/5, 3/5
of five votes). A metric "picks" a side: the higher score wins, and equal scores (or a judge's
tie) are broken by a seeded coin flip. Reported per metric:

* accuracy = share of pairs where the pick is the human majority, per agreement level and over
  all pairs, with a binomial confidence interval (Wilson score, or exact Clopper–Pearson);
* system level: Spearman ρ (and its p-value) between the human ordering of the models (share of
  the human judgments each model won on the pairs) and the metric's ordering (share of those
  pairs the metric picked the model).

Picks are int8 arrays aligned with the pairs: 1 = side a, 0 = side b, -1 = no pick (a judge
that did not cover the pair); pairs without a pick are left out of that metric's counts.
Pure numpy/scipy: no Django import.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd

PICK_A, PICK_B, NO_PICK = 1, 0, -1
ALL_LEVELS = "all"
INTERVAL_METHODS = ("wilson", "clopper-pearson")


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (nan, nan) without trials."""
    _check_counts(successes, trials, confidence)
    if trials == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # At 0 or n successes the bound is exactly 0 or 1; the formula leaves float noise there.
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == trials else min(1.0, centre + half_width)
    return low, high


def clopper_pearson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) interval from beta quantiles; (nan, nan) without trials."""
    from scipy.stats import beta

    _check_counts(successes, trials, confidence)
    if trials == 0:
        return math.nan, math.nan
    alpha = 1 - confidence
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return low, high


def binomial_interval(successes: int, trials: int, *, confidence: float = 0.95, method: str = "wilson"):
    if method == "wilson":
        return wilson_interval(successes, trials, confidence)
    if method == "clopper-pearson":
        return clopper_pearson_interval(successes, trials, confidence)
    raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(INTERVAL_METHODS)}")


def _check_counts(successes: int, trials: int, confidence: float) -> None:
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in 0..trials, got {successes} of {trials}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def pick_by_score(score_a, score_b, rng: np.random.Generator) -> np.ndarray:
    """The side with the higher score; equal scores go to a coin flip (one draw per pair, in order)."""
    score_a, score_b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    if score_a.shape != score_b.shape:
        raise ValueError("score_a and score_b differ in length")
    coins = rng.integers(0, 2, size=score_a.shape[0])
    return np.where(score_a > score_b, PICK_A, np.where(score_a < score_b, PICK_B, coins)).astype(np.int8)


def pick_from_verdicts(winners: Sequence[str | None], rng: np.random.Generator) -> np.ndarray:
    """A judge's verdicts ("model_a", "model_b", "tie"; None = pair not judged) as picks; ties
    go to a coin flip, as the paper does for GPT-4's ties."""
    coins = rng.integers(0, 2, size=len(winners))
    picks = np.full(len(winners), NO_PICK, dtype=np.int8)
    for index, winner in enumerate(winners):
        if winner == "model_a":
            picks[index] = PICK_A
        elif winner == "model_b":
            picks[index] = PICK_B
        elif winner is not None:
            picks[index] = coins[index]
    return picks


def level_label(majority: int, votes: int) -> str:
    return f"{majority}/{votes}"


def ordered_levels(majority: np.ndarray, votes: np.ndarray) -> list[str]:
    """Distinct levels, most votes then largest majority first (5/5, 4/5, 3/5)."""
    keys = sorted({(int(v), int(m)) for m, v in zip(majority, votes)}, reverse=True)
    return [level_label(m, v) for v, m in keys]


def accuracy_by_level(
    human_picks_a: np.ndarray,
    picks: np.ndarray,
    majority: np.ndarray,
    votes: np.ndarray,
    *,
    confidence: float = 0.95,
    interval: str = "wilson",
) -> pd.DataFrame:
    """One row per agreement level and one for all pairs: pairs, correct, accuracy, ci_low, ci_high."""
    human_picks_a, picks = np.asarray(human_picks_a, dtype=bool), np.asarray(picks)
    majority, votes = np.asarray(majority), np.asarray(votes)
    if not len(human_picks_a) == len(picks) == len(majority) == len(votes):
        raise ValueError("human majorities, picks and levels differ in length")
    covered = picks != NO_PICK
    correct = covered & (picks == human_picks_a.astype(np.int8))
    levels = np.array([level_label(m, v) for m, v in zip(majority, votes)], dtype=object)
    rows = []
    for level in [*ordered_levels(majority, votes), ALL_LEVELS]:
        in_level = covered if level == ALL_LEVELS else covered & (levels == level)
        n, k = int(in_level.sum()), int((correct & in_level).sum())
        low, high = binomial_interval(k, n, confidence=confidence, method=interval)
        rows.append({"level": level, "pairs": n, "correct": k, "accuracy": k / n if n else math.nan,
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=["level", "pairs", "correct", "accuracy", "ci_low", "ci_high"])


@dataclass(frozen=True)
class SystemCorrelation:
    """Spearman ρ between the human and the metric's model orderings; nan when undefined."""

    rho: float
    p_value: float
    models: pd.DataFrame  # index model: pairs, human_win_share, metric_win_share
    note: str = ""


def system_correlation(
    model_a: Sequence[str],
    model_b: Sequence[str],
    human_votes_a: np.ndarray,
    human_votes_b: np.ndarray,
    picks: np.ndarray,
) -> SystemCorrelation:
    """Per model: share of the human judgments it won and share of the pairs the metric gave it,
    over the pairs the metric picked in; then Spearman ρ across models (needs three or more)."""
    from scipy.stats import spearmanr

    picks = np.asarray(picks)
    covered = picks != NO_PICK
    frame = pd.DataFrame({
        "model_a": np.asarray(model_a, dtype=object)[covered], "model_b": np.asarray(model_b, dtype=object)[covered],
        "votes_a": np.asarray(human_votes_a, dtype=float)[covered],
        "votes_b": np.asarray(human_votes_b, dtype=float)[covered],
        "pick_a": (picks[covered] == PICK_A).astype(float),
    })
    sides = pd.concat([
        pd.DataFrame({"model": frame["model_a"], "won": frame["votes_a"], "judged": frame["votes_a"] + frame["votes_b"],
                      "picked": frame["pick_a"]}),
        pd.DataFrame({"model": frame["model_b"], "won": frame["votes_b"], "judged": frame["votes_a"] + frame["votes_b"],
                      "picked": 1.0 - frame["pick_a"]}),
    ])
    totals = sides.groupby("model").agg(pairs=("picked", "size"), won=("won", "sum"), judged=("judged", "sum"),
                                        picked=("picked", "sum"))
    models = pd.DataFrame({
        "pairs": totals["pairs"].astype(int),
        "human_win_share": totals["won"] / totals["judged"].where(totals["judged"] > 0),
        "metric_win_share": totals["picked"] / totals["pairs"],
    })
    usable = models.dropna()
    if len(usable) < 3:
        return SystemCorrelation(math.nan, math.nan, models, f"needs three or more models, got {len(usable)}")
    if usable["human_win_share"].nunique() == 1 or usable["metric_win_share"].nunique() == 1:
        return SystemCorrelation(math.nan, math.nan, models, "one of the orderings is a tie of every model")
    result = spearmanr(usable["human_win_share"], usable["metric_win_share"])
    return SystemCorrelation(float(result.statistic), float(result.pvalue), models)


@dataclass(frozen=True)
class MetricAgreement:
    """Accuracy per metric and level (long table) and the system-level correlation per metric."""

    accuracy: pd.DataFrame  # metric, level, pairs, correct, accuracy, ci_low, ci_high
    system: dict[str, SystemCorrelation]
    confidence: float
    interval: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(self.accuracy["metric"]))

    def to_dict(self) -> dict:
        def number(value):
            return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

        metrics = []
        for name in self.metrics:
            rows = self.accuracy[self.accuracy["metric"] == name]
            system = self.system[name]
            metrics.append({
                "metric": name,
                "label": self.labels.get(name, name),
                "accuracy": {
                    row.level: {"pairs": int(row.pairs), "correct": int(row.correct), "accuracy": number(float(row.accuracy)),
                                "ci_low": number(float(row.ci_low)), "ci_high": number(float(row.ci_high))}
                    for row in rows.itertuples()
                },
                "system": {
                    "spearman_rho": number(system.rho), "p_value": number(system.p_value),
                    "note": system.note or None,
                    "models": {
                        str(model): {"pairs": int(row.pairs), "human_win_share": number(float(row.human_win_share)),
                                     "metric_win_share": number(float(row.metric_win_share))}
                        for model, row in system.models.iterrows()
                    },
                },
            })
        return {"confidence": self.confidence, "interval": self.interval, "metrics": metrics}


def compare_with_humans(
    pairs: pd.DataFrame,
    picks: Mapping[str, np.ndarray],
    *,
    confidence: float = 0.95,
    interval: str = "wilson",
    labels: Mapping[str, str] | None = None,
) -> MetricAgreement:
    """``pairs``: one row per pair with model_a, model_b, human_winner ("model_a"/"model_b"),
    majority, votes (the level), votes_a and votes_b (human judgments per side); ``picks``: per
    metric, an int8 array aligned with the rows."""
    required = {"model_a", "model_b", "human_winner", "majority", "votes", "votes_a", "votes_b"}
    missing = required - set(pairs.columns)
    if missing:
        raise ValueError(f"pairs lack the columns {', '.join(sorted(missing))}")
    if not set(pairs["human_winner"]) <= {"model_a", "model_b"}:
        raise ValueError("human_winner must be model_a or model_b (leave tied pairs out)")
    if interval not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {interval!r}; choose from {', '.join(INTERVAL_METHODS)}")
    human_a = (pairs["human_winner"] == "model_a").to_numpy()
    tables, system = [], {}
    for name, metric_picks in picks.items():
        metric_picks = np.asarray(metric_picks)
        if len(metric_picks) != len(pairs):
            raise ValueError(f"{name}: {len(metric_picks)} picks for {len(pairs)} pairs")
        table = accuracy_by_level(human_a, metric_picks, pairs["majority"].to_numpy(), pairs["votes"].to_numpy(),
                                  confidence=confidence, interval=interval)
        table.insert(0, "metric", name)
        tables.append(table)
        system[name] = system_correlation(pairs["model_a"], pairs["model_b"], pairs["votes_a"].to_numpy(),
                                          pairs["votes_b"].to_numpy(), metric_picks)
    columns = ["metric", "level", "pairs", "correct", "accuracy", "ci_low", "ci_high"]
    accuracy = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=columns)
    return MetricAgreement(accuracy=accuracy, system=system, confidence=confidence, interval=interval,
                           labels=dict(labels or {}))


def plot_metric_agreement(result: MetricAgreement, path: str | None = None, *, title: str | None = None):
    """Grouped bars as in the paper's Figure 9: per agreement level, one bar per metric with its
    confidence interval; written as PNG when ``path`` is given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    levels = list(dict.fromkeys(result.accuracy["level"]))
    metrics = result.metrics
    width_inches = min(11.0, max(6.5, 0.25 * len(levels) * max(1, len(metrics)) + 3))
    figure = Figure(figsize=(width_inches, 4.2), layout="constrained")
    FigureCanvasAgg(figure)  # no GUI backend, no global pyplot state
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(metrics))
    x = np.arange(len(levels))
    for position, name in enumerate(metrics):
        rows = result.accuracy[result.accuracy["metric"] == name].set_index("level").reindex(levels)
        heights = rows["accuracy"].to_numpy(dtype=float)
        lower = np.clip(heights - rows["ci_low"].to_numpy(dtype=float), 0, None)
        upper = np.clip(rows["ci_high"].to_numpy(dtype=float) - heights, 0, None)
        axes.bar(x - 0.4 + width * (position + 0.5), np.nan_to_num(heights), width,
                 yerr=[np.nan_to_num(lower), np.nan_to_num(upper)], capsize=2,
                 label=result.labels.get(name, name))
    labels = []
    for level in levels:
        pairs = int(result.accuracy[(result.accuracy["level"] == level)]["pairs"].max())
        labels.append(f"{level}\n(n={pairs})")
    axes.set_xticks(x, labels)
    axes.set_ylim(0, 1)
    axes.set_ylabel("accuracy vs human majority")
    axes.set_xlabel("human agreement level")
    axes.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    interval = {"wilson": "Wilson", "clopper-pearson": "Clopper–Pearson"}[result.interval]
    axes.set_title(title or f"Agreement with the human majority ({result.confidence:.0%} {interval} interval)", fontsize=10)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
    axes.grid(axis="y", alpha=0.3)
    if path is not None:
        figure.savefig(path, format="png", dpi=120)
    return figure
