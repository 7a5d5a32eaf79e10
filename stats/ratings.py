"""Ratings from pairwise battles: online Elo, Bradley–Terry MLE, bootstrap intervals, win rates.

A battle is ``(model_a, model_b, winner)`` with ``winner`` one of ``model_a``, ``model_b``,
``tie`` or ``tie (bothbad)``; both ties score 0.5 for each side. The definitions follow
FastChat's ``fastchat/serve/monitor/elo_analysis.py`` (used by the VisIT-Bench paper):

* online Elo: K=4, SCALE=400, BASE=10, initial 1000, one pass in input order;
* Bradley–Terry: the maximum-likelihood fit of ``P(a beats b) = 1 / (1 + 10^((R_b - R_a)/400))``,
  reported as ``rating = 400 r + 1000`` with mean rating 1000 (or shifted to an anchor);
* bootstrap: battles resampled with replacement; median (Elo) or full-data MLE (Bradley–Terry)
  with the 2.5 % / 97.5 % quantiles and ``rank = 1 + #{models whose lower bound exceeds this
  model's upper bound}``.

Battles are encoded once (:func:`encode_battles`) into integer model ids and outcome codes; every
computation works on those arrays. Bradley–Terry only needs the battle counts per
``(model_a, model_b, outcome)`` cell, so its fit and its bootstrap cost O(models²) per round
whatever the number of battles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pandas as pd
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from .portable_exp import portable_exp

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ELO_K = 4.0
ELO_SCALE = 400.0
ELO_BASE = 10.0
ELO_INITIAL_RATING = 1000.0

# Outcome codes: the score of model_a is code / 2.
MODEL_B_WINS, TIE, MODEL_A_WINS = 0, 1, 2
WINNER_CODES = {"model_a": MODEL_A_WINS, "model_b": MODEL_B_WINS, "tie": TIE, "tie (bothbad)": TIE}
BATTLE_COLUMNS = ("model_a", "model_b", "winner")

# Ridge term (lambda / 2) * sum(r^2) on the base-10 strengths r. It keeps the fit finite when a
# model never wins or never loses (the unpenalised MLE is then at infinity) and pins the mean of
# r to 0 at the optimum. It is a Gaussian prior with a standard deviation of 100 strength units
# (40,000 rating points): on data with a finite MLE it moves ratings by far less than 0.01 point.
BT_L2_PENALTY = 1e-4
BT_TOLERANCE = 1e-10
BT_MAX_ITERATIONS = 200
LN10 = math.log(10.0)

DEFAULT_BOOTSTRAP_ROUNDS = 1000
# Elo bootstrap draws resample indices in blocks of about this many entries (steps x rounds);
# small blocks keep the per-step index rows in cache.
_ELO_BOOTSTRAP_BLOCK_ENTRIES = 1 << 15


class InvalidBattlesError(ValueError):
    """Battles that cannot be rated; names the 0-based ``position`` of the row and the ``field``."""

    def __init__(self, reason: str, *, position: int | None = None, field: str | None = None):
        self.reason, self.position, self.field = reason, position, field
        where = []
        if position is not None:
            where.append(f"data row {position + 1}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


@dataclass(frozen=True, eq=False)
class EncodedBattles:
    """Battles as integer arrays: ``models[a[i]]`` played ``models[b[i]]`` with ``outcome[i]``."""

    models: list[str]
    a: np.ndarray  # int64 model ids of model_a
    b: np.ndarray  # int64 model ids of model_b
    outcome: np.ndarray  # int8: 0 model_b wins, 1 tie, 2 model_a wins
    category: np.ndarray | None = None  # int64 ids into ``categories``
    categories: list[str] | None = None

    @property
    def n_battles(self) -> int:
        return int(self.a.shape[0])

    @property
    def n_models(self) -> int:
        return len(self.models)

    @cached_property
    def score_a(self) -> np.ndarray:
        """Score of model_a per battle: 1, 0.5 or 0."""
        return self.outcome.astype(np.float64) * 0.5

    @cached_property
    def cell(self) -> np.ndarray:
        """Flat ``(model_a, model_b, outcome)`` cell id per battle: ``(a * models + b) * 3 + outcome``."""
        m = self.n_models
        return ((self.a * m + self.b) * 3 + self.outcome).astype(np.int32 if m * m * 3 < 2**31 else np.int64)

    @cached_property
    def cell_counts(self) -> np.ndarray:
        """Battle counts per ``(model_a, model_b, outcome)``, shape (models, models, 3)."""
        m = self.n_models
        return np.bincount(self.cell, minlength=m * m * 3).reshape(m, m, 3)

    @cached_property
    def win_matrix(self) -> np.ndarray:
        """``W[i, j]`` = wins of model i over model j, a tie counting 0.5 for each side."""
        return _win_matrix_from_cells(self.cell_counts)

    @cached_property
    def battles_per_model(self) -> np.ndarray:
        m = self.n_models
        return np.bincount(self.a, minlength=m) + np.bincount(self.b, minlength=m)

    def model_index(self, model: str) -> int:
        try:
            return self.models.index(model)
        except ValueError:
            raise ValueError(f"unknown model {model!r}; battles have {self.models}") from None

    def take(self, rows: np.ndarray) -> EncodedBattles:
        """The battles at ``rows`` (in that order) over the same model list."""
        return EncodedBattles(
            models=self.models,
            a=self.a[rows],
            b=self.b[rows],
            outcome=self.outcome[rows],
            category=None if self.category is None else self.category[rows],
            categories=self.categories,
        )


def _win_matrix_from_cells(cells: np.ndarray) -> np.ndarray:
    a_wins, ties, b_wins = cells[..., MODEL_A_WINS], cells[..., TIE], cells[..., MODEL_B_WINS]
    swap = (*range(cells.ndim - 3), -1, -2)
    return (a_wins + b_wins.transpose(swap) + 0.5 * (ties + ties.transpose(swap))).astype(np.float64)


def _factorize_labels(values: pd.Series, column: str) -> tuple[np.ndarray, list[str]]:
    """Integer codes into sorted string labels; missing or blank values are errors."""
    codes, uniques = pd.factorize(values.to_numpy(dtype=object))
    missing = np.flatnonzero(codes < 0)
    if missing.size:
        raise InvalidBattlesError("missing value", position=int(missing[0]), field=column)
    labels = np.array([str(u) for u in uniques], dtype=object)
    # Sorting makes the model order independent of the row order (and merges 1 with "1").
    sorted_labels, relabel = np.unique(labels, return_inverse=True)
    codes = relabel.reshape(-1)[codes]
    blank = [i for i, label in enumerate(sorted_labels) if not label.strip()]
    if blank:
        position = int(np.flatnonzero(np.isin(codes, blank))[0])
        raise InvalidBattlesError("empty value", position=position, field=column)
    return codes.astype(np.int64), [str(label) for label in sorted_labels]


def encode_battles(battles: pd.DataFrame) -> EncodedBattles:
    """Validate and encode a battle table (columns model_a, model_b, winner, optional category).

    Raises :class:`InvalidBattlesError` for a missing column, a missing or empty value, an
    unknown winner label, a model playing itself or an empty table.
    """
    for column in BATTLE_COLUMNS:
        if column not in battles.columns:
            raise InvalidBattlesError(f"missing column '{column}'", field=column)
    n = len(battles)
    if n == 0:
        raise InvalidBattlesError("no battles")

    both = pd.concat([battles["model_a"], battles["model_b"]], ignore_index=True)
    try:
        codes, models = _factorize_labels(both, "model_a")
    except InvalidBattlesError as error:
        # Positions past n belong to the model_b half of the stacked column.
        position = error.position
        if position is not None and position >= n:
            raise InvalidBattlesError(error.reason, position=position - n, field="model_b") from None
        raise
    a, b = codes[:n], codes[n:]
    same = np.flatnonzero(a == b)
    if same.size:
        row = int(same[0])
        raise InvalidBattlesError(
            f"model_b equals model_a ({models[a[row]]!r}): a model cannot battle itself",
            position=row,
            field="model_b",
        )

    winner_codes, winner_labels = pd.factorize(battles["winner"].to_numpy(dtype=object))
    missing = np.flatnonzero(winner_codes < 0)
    if missing.size:
        raise InvalidBattlesError("missing value", position=int(missing[0]), field="winner")
    outcome_of_label = np.empty(len(winner_labels), dtype=np.int8)
    for i, label in enumerate(winner_labels):
        if not isinstance(label, str) or label not in WINNER_CODES:
            row = int(np.flatnonzero(winner_codes == i)[0])
            raise InvalidBattlesError(
                f"unknown winner {label!r} (expected one of {', '.join(WINNER_CODES)})",
                position=row,
                field="winner",
            )
        outcome_of_label[i] = WINNER_CODES[label]
    outcome = outcome_of_label[winner_codes]

    category = categories = None
    if "category" in battles.columns:
        category, categories = _factorize_labels(battles["category"], "category")
    return EncodedBattles(models=models, a=a, b=b, outcome=outcome, category=category, categories=categories)


# --------------------------------------------------------------------------------------------
# Online Elo


def online_elo(
    battles: EncodedBattles,
    *,
    k: float = ELO_K,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
    initial: float = ELO_INITIAL_RATING,
) -> np.ndarray:
    """One pass of online Elo over the battles in their order; ratings per model id.

    Same recurrence as FastChat's ``compute_elo``; the update of model_b is written as
    ``-K (S_a - E_a)`` (the form in the design notes, which keeps the rating sum constant),
    equal to FastChat's ``K (1 - S_a - E_b)`` up to float rounding.
    """
    ratings = [float(initial)] * battles.n_models
    # A plain loop over Python lists: the recurrence is sequential, and list indexing with
    # float arithmetic is several times faster per step than any numpy call.
    for ia, ib, sa in zip(battles.a.tolist(), battles.b.tolist(), battles.score_a.tolist()):
        ra = ratings[ia]
        rb = ratings[ib]
        delta = k * (sa - 1 / (1 + base ** ((rb - ra) / scale)))
        ratings[ia] = ra + delta
        ratings[ib] = rb - delta
    return np.array(ratings)


def _bootstrap_index_blocks(n_battles: int, rounds: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Resampled battle indices, blocks of shape (steps, rounds); column r is round r's draw."""
    steps_per_block = max(1, _ELO_BOOTSTRAP_BLOCK_ENTRIES // rounds)
    for start in range(0, n_battles, steps_per_block):
        steps = min(steps_per_block, n_battles - start)
        yield rng.integers(0, n_battles, size=(steps, rounds))


def online_elo_bootstrap_indices(n_battles: int, rounds: int, seed: int = 0) -> np.ndarray:
    """The battle indices that :func:`bootstrap_online_elo` draws, shape (rounds, n_battles).

    Round r replays ``battles.take(indices[r])``; meant for checks on small data.
    """
    rng = np.random.default_rng(seed)
    return np.concatenate(list(_bootstrap_index_blocks(n_battles, rounds, rng)), axis=0).T.copy()


def bootstrap_online_elo(
    battles: EncodedBattles,
    rounds: int = DEFAULT_BOOTSTRAP_ROUNDS,
    seed: int = 0,
    *,
    k: float = ELO_K,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
    initial: float = ELO_INITIAL_RATING,
    threads: int | None = None,
) -> np.ndarray:
    """Online Elo on ``rounds`` resamples (with replacement, order as drawn); shape (rounds, models).

    A model absent from a resample gets NaN in that round (as in FastChat, whose per-round
    rating dict lacks it). Round r replays ``battles.take(online_elo_bootstrap_indices(...)[r])``.
    Computed by the compiled kernels of :mod:`stats.elo_bootstrap` on ``threads`` cores
    (default: all), with exactly the values of :func:`bootstrap_online_elo_reference`; where the
    compiled exp does not match numpy's bit for bit, by the reference itself.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    from . import elo_bootstrap  # numba: imported (and its kernels loaded) on first use

    if not (elo_bootstrap.exp_matches_numpy() and battles.n_battles < 2**31):
        return bootstrap_online_elo_reference(battles, rounds, seed, k=k, scale=scale, base=base, initial=initial)
    unit = math.log(base) / scale
    k_unit = k * unit
    cell_ids = np.arange(battles.n_models * battles.n_models * 3)
    u, seen = elo_bootstrap.bootstrap_online_elo_compiled(
        battles.cell, battles.n_models, rounds, seed, k_unit=k_unit,
        score_of_cell=(cell_ids % 3) * 0.5 * k_unit, threads=threads,
    )
    ratings = initial + u / unit
    ratings[~seen] = np.nan
    return ratings


def bootstrap_online_elo_reference(
    battles: EncodedBattles,
    rounds: int = DEFAULT_BOOTSTRAP_ROUNDS,
    seed: int = 0,
    *,
    k: float = ELO_K,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
    initial: float = ELO_INITIAL_RATING,
) -> np.ndarray:
    """:func:`bootstrap_online_elo` in plain numpy: the definition the compiled version matches.

    All rounds advance together, one battle step at a time, so each step is a handful of numpy
    operations over ``rounds`` values. Used where the compiled exp differs from numpy's, and by
    the tests and the benchmark as the reference.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    n, m = battles.n_battles, battles.n_models
    rng = np.random.default_rng(seed)
    # Work in natural-log odds units u = (R - initial) * ln(base) / scale, so that
    # E_a = sigmoid(u_a - u_b) and the update is u_a += K' (S_a - E_a) with K' = K ln(base)/scale.
    unit = math.log(base) / scale
    k_unit = k * unit
    u = np.zeros(rounds * m)
    seen = np.zeros(rounds * m, dtype=bool)
    offsets = np.arange(rounds) * m
    # One small random gather per draw: the battle's (model_a, model_b, outcome) cell, whose
    # parts come from tables that stay in cache.
    cell_of_battle = battles.cell
    cell_ids = np.arange(m * m * 3)
    a_of_cell, b_of_cell = cell_ids // (3 * m), (cell_ids // 3) % m
    scaled_score_of_cell = (cell_ids % 3) * 0.5 * k_unit
    update = np.empty(rounds)
    for block in _bootstrap_index_blocks(n, rounds, rng):
        drawn = cell_of_battle[block]
        # Row t holds the flat positions of model_a in every round, then those of model_b.
        flat_ab = np.concatenate([a_of_cell[drawn] + offsets, b_of_cell[drawn] + offsets], axis=1)
        seen[flat_ab.ravel()] = True
        block_scores = scaled_score_of_cell[drawn]
        for positions, sa in zip(flat_ab, block_scores):
            pair = u.take(positions)
            ua = pair[:rounds]
            ub = pair[rounds:]
            np.subtract(ub, ua, out=update)
            update = portable_exp(update)  # np.exp's bits vary by CPU; this one's do not
            update += 1.0
            np.divide(-k_unit, update, out=update)  # -K' E_a
            update += sa  # K' (S_a - E_a)
            ua += update
            ub -= update
            u[positions] = pair
    ratings = initial + u / unit
    ratings[~seen] = np.nan
    return ratings.reshape(rounds, m)


# --------------------------------------------------------------------------------------------
# Bradley–Terry


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """Penalised MLE of the base-10 strengths ``r`` and ``ratings = 400 r + 1000`` (+ anchor shift)."""

    models: list[str]
    ratings: np.ndarray
    strengths: np.ndarray
    iterations: int
    degenerate_models: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _bt_objective(wins: np.ndarray, strengths: np.ndarray, penalty: float) -> np.ndarray:
    """Negative penalised log-likelihood per round; wins (R, M, M), strengths (R, M)."""
    logit = LN10 * (strengths[:, :, None] - strengths[:, None, :])
    return (wins * np.logaddexp(0.0, -logit)).sum(axis=(1, 2)) + 0.5 * penalty * (strengths**2).sum(axis=1)


def _fit_bt_batched(
    wins: np.ndarray,
    start: np.ndarray,
    *,
    penalty: float = BT_L2_PENALTY,
    tolerance: float = BT_TOLERANCE,
    max_iterations: int = BT_MAX_ITERATIONS,
) -> tuple[np.ndarray, int]:
    """Damped Newton on many independent Bradley–Terry problems at once.

    ``wins`` has shape (R, M, M) (wins of i over j per round), ``start`` (R, M). The objective is
    strictly convex thanks to the penalty, so Newton with Armijo backtracking converges from any
    start; rounds stop as soon as their step is below ``tolerance``.
    Returns the strengths (R, M) and the number of iterations used by the slowest round
    (``max_iterations`` + 1 when some round did not converge).
    """
    strengths = np.array(start, dtype=np.float64, copy=True)
    strengths -= strengths.mean(axis=1, keepdims=True)
    rounds, m = strengths.shape
    games = wins + wins.transpose(0, 2, 1)
    diagonal = np.arange(m)
    active = np.arange(rounds)
    iterations = 0
    while active.size and iterations < max_iterations:
        iterations += 1
        w, g, r = wins[active], games[active], strengths[active]
        p = expit(LN10 * (r[:, :, None] - r[:, None, :]))
        gradient = -LN10 * (w - g * p).sum(axis=2) + penalty * r
        curvature = (LN10**2) * g * p * (1.0 - p)
        # The likelihood ignores a common shift of all strengths, so its Hessian is singular
        # along (1, ..., 1) and only the tiny penalty holds that direction. Working in the
        # mean-zero subspace (where the optimum lies) keeps rounding noise in the gradient from
        # being amplified by 1 / penalty along it: centre the gradient and give the all-ones
        # direction unit curvature.
        gradient -= gradient.mean(axis=1, keepdims=True)
        hessian = -curvature + 1.0 / m
        hessian[:, diagonal, diagonal] = curvature.sum(axis=2) + penalty + 1.0 / m
        step = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]

        current = _bt_objective(w, r, penalty)
        slope = (gradient * step).sum(axis=1)
        length = np.ones(active.size)
        for _ in range(60):
            candidate = r + length[:, None] * step
            value = _bt_objective(w, candidate, penalty)
            # The relative slack absorbs rounding once the objective stops changing.
            accepted = value <= current + 1e-4 * length * slope + 1e-12 * np.abs(current)
            if accepted.all():
                break
            length = np.where(accepted, length, 0.5 * length)
        strengths[active] = candidate
        moved = np.abs(length[:, None] * step).max(axis=1)
        active = active[moved > tolerance]
    if active.size:
        iterations += 1
    return strengths, iterations


def _degenerate_report(models: list[str], wins: np.ndarray) -> tuple[list[str], list[str]]:
    """Models whose unpenalised MLE is infinite, and human-readable warnings about them."""
    won = wins.sum(axis=1)
    lost = wins.sum(axis=0)
    played = won + lost
    never_won = [models[i] for i in np.flatnonzero((won == 0) & (played > 0))]
    never_lost = [models[i] for i in np.flatnonzero((lost == 0) & (played > 0))]
    messages = []
    if never_won:
        messages.append(
            f"never won a battle: {', '.join(never_won)}; the MLE is minus infinity, so the "
            f"reported rating is only held finite by the L2 penalty ({BT_L2_PENALTY:g}) and says "
            "'below everything it met', not how far below"
        )
    if never_lost:
        messages.append(
            f"never lost a battle: {', '.join(never_lost)}; the MLE is plus infinity, so the "
            f"reported rating is only held finite by the L2 penalty ({BT_L2_PENALTY:g}) and says "
            "'above everything it met', not how far above"
        )
    weak, _ = connected_components(wins + wins.T > 0, directed=False)
    if weak > 1:
        messages.append(
            f"the models form {weak} groups that never met each other; ratings are only "
            "comparable within a group"
        )
    else:
        strong, _ = connected_components(wins > 0, directed=True, connection="strong")
        if strong > 1 and not (never_won or never_lost):
            messages.append(
                "some group of models never lost to the others (the win graph is not strongly "
                "connected); the gaps between groups are held finite by the L2 penalty"
            )
    degenerate = sorted(set(never_won) | set(never_lost))
    return degenerate, messages


def anchor_offset(models: list[str], ratings: np.ndarray, anchor: tuple[str, float] | None) -> float:
    """Constant to add to every rating so that the anchor model gets its rating (0 without anchor).

    One constant for the whole result (point, interval and bootstrap samples alike): anchoring
    relabels the scale and leaves differences, intervals' widths and ranks unchanged.
    """
    if anchor is None:
        return 0.0
    model, rating = anchor
    if model not in models:
        raise ValueError(f"anchor model {model!r} is not in the battles")
    return float(rating) - float(ratings[models.index(model)])


def bradley_terry(
    battles: EncodedBattles,
    *,
    anchor: tuple[str, float] | None = None,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL_RATING,
    penalty: float = BT_L2_PENALTY,
) -> BradleyTerryFit:
    """Bradley–Terry MLE from the collapsed counts: mean rating ``initial`` unless anchored.

    ``penalty=0`` gives the plain MLE, which exists only when every model both won and lost
    (more precisely: when the win graph is strongly connected).
    """
    wins = battles.win_matrix
    strengths, iterations = _fit_bt_batched(wins[None], np.zeros((1, battles.n_models)), penalty=penalty)
    strengths = strengths[0] - strengths[0].mean()
    ratings = scale * strengths + initial
    ratings = ratings + anchor_offset(battles.models, ratings, anchor)
    degenerate, messages = _degenerate_report(battles.models, wins)
    if iterations > BT_MAX_ITERATIONS:
        messages.append(f"the fit did not converge in {BT_MAX_ITERATIONS} Newton iterations")
    return BradleyTerryFit(battles.models, ratings, strengths, iterations, degenerate, messages)


def bootstrap_bradley_terry(
    battles: EncodedBattles,
    rounds: int = DEFAULT_BOOTSTRAP_ROUNDS,
    seed: int = 0,
    *,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL_RATING,
    start: np.ndarray | None = None,
    penalty: float = BT_L2_PENALTY,
) -> np.ndarray:
    """Bradley–Terry ratings (mean ``initial`` per round) on ``rounds`` resamples; shape (rounds, models).

    Resampling n battles with replacement gives cell counts ~ Multinomial(n, counts / n), so each
    round draws the counts directly. All rounds are fitted together by batched Newton steps,
    warm-started at the full-data strengths (``start``, base-10 units, computed if omitted).
    A model with no battle in a round gets NaN there.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    m = battles.n_models
    cells = battles.cell_counts.reshape(-1)
    occupied = np.flatnonzero(cells)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(battles.n_battles, cells[occupied] / battles.n_battles, size=rounds)

    resampled = np.zeros((rounds, m * m * 3))
    resampled[:, occupied] = draws
    resampled = resampled.reshape(rounds, m, m, 3)
    wins = _win_matrix_from_cells(resampled)
    if start is None:
        start = bradley_terry(battles, scale=scale, initial=initial, penalty=penalty).strengths
    strengths, _ = _fit_bt_batched(wins, np.broadcast_to(start, (rounds, m)), penalty=penalty)
    strengths -= strengths.mean(axis=1, keepdims=True)
    ratings = scale * strengths + initial
    played = (wins.sum(axis=1) + wins.sum(axis=2)) > 0
    ratings[~played] = np.nan
    return ratings


# --------------------------------------------------------------------------------------------
# Intervals, ranks and win rates


@dataclass(frozen=True, eq=False)
class BootstrapSummary:
    low: np.ndarray
    median: np.ndarray
    high: np.ndarray


def summarize_bootstrap(samples: np.ndarray, *, level: float = 0.95) -> BootstrapSummary:
    """Per-model median and central ``level`` interval of bootstrap ratings (NaN = absent)."""
    tail = (1.0 - level) / 2.0
    low, median, high = np.nanquantile(samples, [tail, 0.5, 1.0 - tail], axis=0)
    return BootstrapSummary(low=low, median=median, high=high)


def interval_ranks(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``1 + #{models whose lower bound exceeds this model's upper bound}``."""
    return 1 + (low[None, :] > high[:, None]).sum(axis=1)


def rating_order_ranks(ratings: np.ndarray) -> np.ndarray:
    """``1 + #{models with a strictly higher rating}`` (equal ratings share a rank)."""
    return 1 + (ratings[None, :] > ratings[:, None]).sum(axis=1)


def predicted_win_rates(ratings: np.ndarray, *, scale: float = ELO_SCALE, base: float = ELO_BASE) -> np.ndarray:
    """``P[i, j] = 1 / (1 + base^((R_j - R_i) / scale))``; the diagonal is NaN."""
    ratings = np.asarray(ratings, dtype=np.float64)
    probabilities = 1.0 / (1.0 + base ** ((ratings[None, :] - ratings[:, None]) / scale))
    np.fill_diagonal(probabilities, np.nan)
    return probabilities


def empirical_win_fractions(battles: EncodedBattles) -> np.ndarray:
    """Share of the battles between i and j that i won (ties 0.5); NaN when they never met."""
    wins = battles.win_matrix
    games = wins + wins.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, wins / games, np.nan)


def _model_outcomes(battles: EncodedBattles) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each battle seen from both sides: (model, opponent, score of model, battle row)."""
    rows = np.arange(battles.n_battles)
    model = np.concatenate([battles.a, battles.b])
    opponent = np.concatenate([battles.b, battles.a])
    score = np.concatenate([battles.outcome, MODEL_A_WINS - battles.outcome]) * 0.5
    return model, opponent, score, np.concatenate([rows, rows])


def win_rate_vs_reference(battles: EncodedBattles, reference: str) -> pd.DataFrame:
    """Per model: battles against ``reference``, wins, ties, losses and win rate (ties count 0.5).

    The reference itself is left out.
    """
    ref = battles.model_index(reference)
    model, opponent, score, _ = _model_outcomes(battles)
    against = opponent == ref
    m = battles.n_models
    games = np.bincount(model[against], minlength=m)
    wins = np.bincount(model[against & (score == 1.0)], minlength=m)
    ties = np.bincount(model[against & (score == 0.5)], minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, (wins + 0.5 * ties) / games, np.nan)
    frame = pd.DataFrame(
        {"battles": games, "wins": wins, "ties": ties, "losses": games - wins - ties, "win_rate": rate},
        index=pd.Index(battles.models, name="model"),
    )
    return frame.drop(index=reference)


def category_win_rates(battles: EncodedBattles, reference: str | None = None) -> pd.DataFrame:
    """Win rate per model (rows) and category (columns); ties count 0.5, NaN where no battle.

    With ``reference``, only battles against the reference count (the paper's per-family win
    rate against the human-verified reference); otherwise every battle of the model counts.
    """
    if battles.category is None or battles.categories is None:
        raise ValueError("the battles have no 'category' column")
    model, opponent, score, row = _model_outcomes(battles)
    keep = slice(None) if reference is None else opponent == battles.model_index(reference)
    m, c = battles.n_models, len(battles.categories)
    cell = battles.category[row[keep]] * m + model[keep]
    games = np.bincount(cell, minlength=c * m).reshape(c, m)
    points = np.bincount(cell, weights=score[keep], minlength=c * m).reshape(c, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, points / games, np.nan)
    frame = pd.DataFrame(
        rate.T,
        index=pd.Index(battles.models, name="model"),
        columns=pd.Index(battles.categories, name="category"),
    )
    return frame if reference is None else frame.drop(index=reference)


# --------------------------------------------------------------------------------------------
# DataFrame-facing API


def _json_number(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


@dataclass(frozen=True, eq=False)
class RatingsResult:
    """Ratings of every model with intervals, ranks, battle counts and win rates."""

    method: str
    models: list[str]
    rating: np.ndarray
    ci_low: np.ndarray | None
    ci_high: np.ndarray | None
    rank: np.ndarray
    battles: np.ndarray
    win_rate_matrix: pd.DataFrame  # predicted P(row beats column) from ``rating``
    empirical_win_fractions: pd.DataFrame
    bootstrap_rounds: int | None = None
    seed: int | None = None
    anchor: tuple[str, float] | None = None
    reference: str | None = None
    vs_reference: pd.DataFrame | None = None
    category_win_rates: pd.DataFrame | None = None
    samples: np.ndarray | None = None  # bootstrap ratings, shape (rounds, models)
    degenerate_models: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def _order(self) -> np.ndarray:
        # Best first; the name breaks rating ties so the order is deterministic.
        return np.array(sorted(range(len(self.models)), key=lambda i: (-self.rating[i], self.models[i])), dtype=int)

    def to_frame(self) -> pd.DataFrame:
        """One row per model, best first."""
        nan = np.full(len(self.models), np.nan)
        frame = pd.DataFrame(
            {
                "rating": self.rating,
                "ci_low": nan if self.ci_low is None else self.ci_low,
                "ci_high": nan if self.ci_high is None else self.ci_high,
                "rank": self.rank,
                "battles": self.battles,
            },
            index=pd.Index(self.models, name="model"),
        )
        if self.vs_reference is not None:
            vs = self.vs_reference.reindex(self.models)
            frame["win_rate_vs_reference"] = vs["win_rate"]
            frame["battles_vs_reference"] = vs["battles"].astype("Int64")
            frame["ties_vs_reference"] = vs["ties"].astype("Int64")
        return frame.iloc[self._order()]

    def to_dict(self) -> dict:
        """JSON-ready: ``method``, ``models`` (best first) and ``win_rate_matrix`` plus context."""
        vs = None if self.vs_reference is None else self.vs_reference.reindex(self.models)
        rows = []
        for i in self._order():
            row = {
                "model": self.models[i],
                "rating": float(self.rating[i]),
                "ci_low": None if self.ci_low is None else _json_number(self.ci_low[i]),
                "ci_high": None if self.ci_high is None else _json_number(self.ci_high[i]),
                "rank": int(self.rank[i]),
                "battles": int(self.battles[i]),
            }
            if vs is not None:
                played = vs["battles"].iloc[i]
                row["win_rate_vs_reference"] = _json_number(vs["win_rate"].iloc[i])
                row["battles_vs_reference"] = None if pd.isna(played) else int(played)
                ties = vs["ties"].iloc[i]
                row["ties_vs_reference"] = None if pd.isna(ties) else int(ties)
            rows.append(row)
        matrix = {
            a: {b: _json_number(self.win_rate_matrix.at[a, b]) for b in self.models} for a in self.models
        }
        per_category = None
        if self.category_win_rates is not None:
            per_category = {
                category: {model: _json_number(rate) for model, rate in column.items()}
                for category, column in self.category_win_rates.items()
            }
        return {
            "method": self.method,
            "bootstrap_rounds": self.bootstrap_rounds,
            "seed": self.seed,
            "anchor": None if self.anchor is None else {"model": self.anchor[0], "rating": float(self.anchor[1])},
            "reference": self.reference,
            "models": rows,
            "win_rate_matrix": matrix,
            "category_win_rates": per_category,
            "degenerate_models": list(self.degenerate_models),
            "warnings": list(self.warnings),
        }


def compute_ratings(
    battles: pd.DataFrame | EncodedBattles,
    method: str = "elo",
    bootstrap: int | None = None,
    seed: int = 0,
    anchor: tuple[str, float] | None = None,
    reference: str | None = None,
) -> RatingsResult:
    """Ratings of a battle table for notebooks and the ``ratings`` command.

    ``method="elo"``: one online pass in row order, or with ``bootstrap=N`` the median of N
    resampled passes. ``method="bt"``: the full-data Bradley–Terry MLE (mean 1000 unless
    ``anchor=(model, rating)``, one shift of everything), with ``bootstrap=N`` adding the 95 %
    interval. ``reference`` adds each model's win rate against that model; a ``category``
    column adds per-category win rates (against the reference when there is one).
    """
    if method not in ("elo", "bt"):
        raise ValueError(f"method must be 'elo' or 'bt', not {method!r}")
    if bootstrap is not None and bootstrap < 1:
        raise ValueError("bootstrap must be a positive number of rounds")
    encoded = battles if isinstance(battles, EncodedBattles) else encode_battles(battles)
    models = encoded.models
    if anchor is not None:
        encoded.model_index(anchor[0])
        anchor = (anchor[0], float(anchor[1]))
    if reference is not None:
        encoded.model_index(reference)

    degenerate: list[str] = []
    messages: list[str] = []
    samples = low = high = None
    if method == "bt":
        fit = bradley_terry(encoded)
        rating, degenerate, messages = fit.ratings, fit.degenerate_models, list(fit.warnings)
        if bootstrap:
            samples = bootstrap_bradley_terry(encoded, bootstrap, seed, start=fit.strengths)
    elif bootstrap:
        samples = bootstrap_online_elo(encoded, bootstrap, seed)
    else:
        rating = online_elo(encoded)
    if samples is not None:
        summary = summarize_bootstrap(samples)
        low, high = summary.low, summary.high
        if method == "elo":
            rating = summary.median
        rank = interval_ranks(low, high)
    else:
        rank = rating_order_ranks(rating)
    offset = anchor_offset(models, rating, anchor)
    if offset:
        rating = rating + offset
        if samples is not None:
            samples, low, high = samples + offset, low + offset, high + offset

    vs_reference = per_category = None
    if reference is not None:
        vs_reference = win_rate_vs_reference(encoded, reference)
    if encoded.category is not None:
        per_category = category_win_rates(encoded, reference)
    index = pd.Index(models, name="model")
    return RatingsResult(
        method=method,
        models=models,
        rating=rating,
        ci_low=low,
        ci_high=high,
        rank=rank,
        battles=encoded.battles_per_model,
        win_rate_matrix=pd.DataFrame(predicted_win_rates(rating), index=index, columns=index),
        empirical_win_fractions=pd.DataFrame(empirical_win_fractions(encoded), index=index, columns=index),
        bootstrap_rounds=bootstrap,
        seed=seed if bootstrap else None,
        anchor=anchor,
        reference=reference,
        vs_reference=vs_reference,
        category_win_rates=per_category,
        samples=samples,
        degenerate_models=degenerate,
        warnings=messages,
    )


def plot_ratings(result: RatingsResult, path: str | None = None, *, title: str | None = None) -> Figure:
    """Ratings best first with their 95 % interval bars; written as PNG when ``path`` is given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    frame = result.to_frame()
    # Horizontal layout: long model names stay readable, best model on top.
    figure = Figure(figsize=(7.0, max(2.5, 0.4 * len(frame) + 1.5)), layout="constrained")
    FigureCanvasAgg(figure)  # Agg canvas: no GUI backend, no global pyplot state
    axes = figure.add_subplot()
    y = np.arange(len(frame))[::-1]
    if frame["ci_low"].notna().any():
        lower = (frame["rating"] - frame["ci_low"]).clip(lower=0).fillna(0)
        upper = (frame["ci_high"] - frame["rating"]).clip(lower=0).fillna(0)
        axes.errorbar(frame["rating"], y, xerr=[lower, upper], fmt="o", capsize=4)
    else:
        axes.plot(frame["rating"], y, "o")
    axes.set_yticks(y, frame.index)
    axes.set_xlabel("rating")
    if title is None:
        title = {"elo": "Online Elo", "bt": "Bradley–Terry"}[result.method]
        if result.bootstrap_rounds:
            title += f"\n95 % bootstrap interval, {result.bootstrap_rounds} rounds"
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    if path is not None:
        figure.savefig(path, format="png", dpi=120)
    return figure


def plot_category_win_rates(result: RatingsResult, path: str | None = None) -> Figure:
    """Per-category win rates as a heat map (models best first, one column per category; against the
    reference when the result has one); written as PNG when ``path`` is given. The cells carry no
    numbers (the figure is meant beside the table of them; a text per cell triples its drawing time)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if result.category_win_rates is None:
        raise ValueError("the result has no per-category win rates")
    order = [model for model in result.to_frame().index if model in result.category_win_rates.index]
    rates = result.category_win_rates.reindex(order)
    figure = Figure(figsize=(max(5.0, 0.9 * rates.shape[1] + 3.0), max(2.5, 0.4 * len(rates) + 1.8)),
                    layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    image = axes.imshow(np.ma.masked_invalid(rates.to_numpy(dtype=float)), vmin=0.0, vmax=1.0, cmap="RdYlGn",
                        aspect="auto")
    axes.set_xticks(np.arange(rates.shape[1]), [str(c) for c in rates.columns], rotation=30, ha="right")
    axes.set_yticks(np.arange(len(rates)), rates.index)
    figure.colorbar(image, ax=axes, label="win rate")
    against = f" against {result.reference}" if result.reference else ""
    axes.set_title(f"Win rate per category{against}", fontsize=10)
    if path is not None:
        figure.savefig(path, format="png", dpi=120)
    return figure


__all__: Sequence[str] = [
    "BT_L2_PENALTY",
    "BradleyTerryFit",
    "BootstrapSummary",
    "EncodedBattles",
    "InvalidBattlesError",
    "RatingsResult",
    "WINNER_CODES",
    "bootstrap_bradley_terry",
    "bootstrap_online_elo",
    "bootstrap_online_elo_reference",
    "bradley_terry",
    "category_win_rates",
    "compute_ratings",
    "empirical_win_fractions",
    "encode_battles",
    "anchor_offset",
    "interval_ranks",
    "online_elo",
    "online_elo_bootstrap_indices",
    "plot_category_win_rates",
    "plot_ratings",
    "predicted_win_rates",
    "rating_order_ranks",
    "summarize_bootstrap",
    "win_rate_vs_reference",
]
