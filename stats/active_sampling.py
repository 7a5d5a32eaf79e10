"""Active pair sampling for pairwise rounds: which pair of models the next judgments should go to.

Pure numpy (no Django). The round's state is the win matrix ``W`` (``W[i, j]`` = judgments in
which model i beat model j, a tie half a win each side), the sufficient statistic of the
Bradley–Terry likelihood. From it:

* :func:`fit` gives the Bradley–Terry ratings (Elo scale, mean 1000) and their covariance, the
  pseudo-inverse of the observed Fisher information ``H`` (or the sandwich ``H⁺ M H⁺`` with the
  empirical variance of the scores ``M``; with one judgment per worker and pair drawn at random
  the two agree, bench/sampling.py prints both coverages);
* a :class:`Goal` names the contrasts that matter ("separate adjacent ranks", "every interval
  narrower than W", "find the top k") and says which of them are still unresolved
  (:func:`progress`, also the stopping test);
* :func:`choose_pairs` draws the next batch: a share ``exploration`` uniformly over all pairs (no
  pair starves, every pair's count grows with the round), the rest greedily by the expected
  reduction, per judgment, of the standard errors of the unresolved contrasts (Chiang et al.,
  2024, weight pairs by the expected shrinking of the intervals that matter).

Why the intervals stay valid although the design adapts: the probability of the data factorises
into ``Π P(pair_t | past judgments) · Π P(outcome_t | pair_t, ratings)``. The first factor does
not involve the ratings (the rule only looks at past outcomes), so the likelihood, its maximiser
and its observed information are exactly those of a fixed design with the same counts. The
score is a martingale; as long as every pair keeps being sampled (the exploration share) the
normalised information converges and the martingale central limit theorem gives the usual normal
intervals (Lai & Wei, 1982). No inverse-probability weights are needed for the MLE. What adaptive
designs do change is the estimand when the crowd is not Bradley–Terry (the fit is then the best
Bradley–Terry approximation for the pairs that were asked); ``bench/sampling.py`` measures the
coverage that results with a crowd that is not Bradley–Terry (per-worker noise, random clickers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from .ratings import BT_L2_PENALTY, ELO_INITIAL_RATING, ELO_SCALE, LN10, _fit_bt_batched

GOAL_KINDS = ("adjacent", "width", "top_k")
DEFAULT_EXPLORATION = 0.1
# Judgments per pair drawn uniformly before the fit is trusted to steer (every pair met).
WARMUP_PER_PAIR = 2
# Virtual ties added to every pair before a fit (see ``fit``).
PRIOR_TIES = 1.0
# Natural-log odds to Elo points.
ELO_PER_NAT = ELO_SCALE / LN10


@dataclass(frozen=True)
class Goal:
    """What the round is for. ``adjacent``: every two models next to each other in the current
    order have a difference significant at ``level``; ``width``: every model's ``level`` interval
    is narrower than ``width`` Elo points; ``top_k``: each of the current top ``k`` is separated
    from every model outside them at ``level``."""

    kind: str = "adjacent"
    level: float = 0.95
    width: float | None = None
    k: int | None = None

    def __post_init__(self):
        if self.kind not in GOAL_KINDS:
            raise ValueError(f"unknown goal {self.kind!r} (expected one of {', '.join(GOAL_KINDS)})")
        if not 0.5 < self.level < 1:
            raise ValueError("the goal's level must lie between 0.5 and 1")
        if self.kind == "width" and not (self.width and self.width > 0):
            raise ValueError("the width goal needs a positive width in Elo points")
        if self.kind == "top_k" and not (self.k and self.k >= 1):
            raise ValueError("the top-k goal needs k of at least 1")

    @property
    def z(self) -> float:
        """Two-sided normal quantile of the level (1.96 at 95 %)."""
        return float(norm.ppf(0.5 + self.level / 2))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "level": self.level, "width": self.width, "k": self.k}

    @classmethod
    def from_dict(cls, data: dict) -> Goal:
        return cls(kind=data.get("kind", "adjacent"), level=float(data.get("level", 0.95)),
                   width=None if data.get("width") is None else float(data["width"]),
                   k=None if data.get("k") is None else int(data["k"]))

    def describe(self) -> str:
        percent = f"{self.level * 100:g} %"
        if self.kind == "adjacent":
            return f"separate adjacent ranks at {percent}"
        if self.kind == "width":
            return f"every {percent} interval narrower than {self.width:g} Elo points"
        return f"find the top {self.k} at {percent}"


@dataclass(frozen=True, eq=False)
class Estimate:
    """Bradley–Terry ratings (Elo points, mean 1000) and their covariance (Elo points²)."""

    ratings: np.ndarray
    covariance: np.ndarray
    judgments: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        half = float(norm.ppf(0.5 + level / 2)) * np.sqrt(np.clip(np.diag(self.covariance), 0, None))
        return self.ratings - half, self.ratings + half


def _information(games: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Fisher information of the natural-log strengths; ``games[i, j]`` (symmetric) judgments of each pair."""
    weights = np.triu(games, 1) * p * (1 - p)
    weights = weights + weights.T
    return np.diag(weights.sum(axis=1)) - weights


def fit(wins: np.ndarray, *, sandwich: bool = False, prior_ties: float = PRIOR_TIES) -> Estimate:
    """Bradley–Terry fit of the win matrix with its analytic covariance: the inverse of the observed
    information, or with ``sandwich`` the robust ``H⁺ M H⁺``.

    ``prior_ties`` virtual ties are added to every pair first. Without them a round whose few
    first judgments all agree with one order has an infinite MLE, and both covariances collapse
    towards zero there (p̂ → 0 or 1): the goal would look met after a handful of judgments. One
    tie per pair moves the ratings of a round of thousands of judgments by a fraction of a point.
    The likelihood ignores a common shift, so the information is singular along (1, ..., 1): its
    pseudo-inverse is the covariance of the mean-centred ratings, the ones reported.
    """
    wins = np.asarray(wins, dtype=np.float64)
    m = wins.shape[0]
    games_seen = wins + wins.T
    wins = wins + (0.5 * prior_ties) * (1 - np.eye(m))
    strengths, _ = _fit_bt_batched(wins[None], np.zeros((1, m)), penalty=BT_L2_PENALTY)
    strengths = strengths[0] - strengths[0].mean()
    nats = LN10 * strengths
    p = expit(nats[:, None] - nats[None, :])  # P(i beats j)
    games = wins + wins.T
    bread = np.linalg.pinv(_information(games, p), hermitian=True)
    if sandwich:
        # Empirical variance of each pair's scores: W_ij (1 - p)² + W_ji p², summed per pair,
        # in place of the model's n p (1 - p) (ties are counted as half a win each side).
        meat_weights = np.triu(wins * (1 - p) ** 2 + wins.T * p**2, 1)
        meat_weights = meat_weights + meat_weights.T
        meat = np.diag(meat_weights.sum(axis=1)) - meat_weights
        covariance = bread @ meat @ bread
    else:
        covariance = bread
    return Estimate(ratings=ELO_SCALE * strengths + ELO_INITIAL_RATING,
                    covariance=covariance * ELO_PER_NAT**2, judgments=int(round(games_seen.sum() / 2)))


@dataclass(frozen=True)
class Progress:
    """How far the goal is: ``done`` of ``total`` contrasts resolved (``met`` when all are)."""

    goal: Goal
    done: int
    total: int

    @property
    def met(self) -> bool:
        return self.total > 0 and self.done >= self.total

    def describe(self) -> str:
        if self.goal.kind == "adjacent":
            return f"{self.done} of {self.total} adjacent pairs separated"
        if self.goal.kind == "width":
            return f"{self.done} of {self.total} intervals narrower than {self.goal.width:g} Elo points"
        return f"{self.done} of {self.total} pairs across the top {self.goal.k} separated"

    def to_dict(self) -> dict:
        return {"goal": self.goal.describe(), "done": self.done, "total": self.total, "met": self.met,
                "text": self.describe()}


def _contrasts(goal: Goal, estimate: Estimate) -> tuple[np.ndarray, np.ndarray]:
    """The goal's contrast vectors (rows) and whether each is still unresolved."""
    m = estimate.ratings.shape[0]
    order = np.argsort(-estimate.ratings, kind="stable")
    if goal.kind == "width":
        vectors = np.eye(m) - 1.0 / m  # each centred rating (the covariance is of centred ones)
        widths = 2 * goal.z * np.sqrt(np.clip(np.einsum("ij,jk,ik->i", vectors, estimate.covariance, vectors), 0, None))
        return vectors, ~(widths < goal.width)
    if goal.kind == "adjacent":
        pairs = list(zip(order[:-1], order[1:]))
    else:
        k = min(goal.k, m - 1)
        pairs = [(i, j) for i in order[:k] for j in order[k:]]
    vectors = np.zeros((len(pairs), m))
    for row, (i, j) in enumerate(pairs):
        vectors[row, i], vectors[row, j] = 1.0, -1.0
    differences = vectors @ estimate.ratings
    se = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", vectors, estimate.covariance, vectors), 0, None))
    return vectors, ~(np.abs(differences) > goal.z * se)


def progress(goal: Goal, estimate: Estimate) -> Progress:
    """The stopping test: the goal is met when every one of its contrasts is resolved."""
    _vectors, unresolved = _contrasts(goal, estimate)
    return Progress(goal=goal, done=int((~unresolved).sum()), total=int(unresolved.shape[0]))


def all_pairs(m: int) -> np.ndarray:
    """Every unordered pair of model ids (i < j), shape (pairs, 2)."""
    i, j = np.triu_indices(m, 1)
    return np.stack([i, j], axis=1)


def choose_pairs(
    wins: np.ndarray,
    goal: Goal,
    *,
    count: int,
    rng: np.random.Generator,
    exploration: float = DEFAULT_EXPLORATION,
    estimate: Estimate | None = None,
) -> list[tuple[int, int]]:
    """The next ``count`` judgments' pairs (model ids, unordered).

    Until every pair has ``WARMUP_PER_PAIR`` judgments, and for an ``exploration`` share of each
    batch after that, pairs are uniform. The rest are chosen one by one: each candidate pair's
    gain is the sum, over the goal's unresolved contrasts v, of the drop of v's standard error
    that one more judgment of the pair would bring (Sherman–Morrison on the information, using
    the fitted win probability); the best pair is taken and the covariance updated as if it had
    been judged, so a batch spreads over the pairs that help.
    """
    wins = np.asarray(wins, dtype=np.float64)
    m = wins.shape[0]
    candidates = all_pairs(m)
    if count < 1:
        return []
    games = wins + wins.T
    per_pair = games[candidates[:, 0], candidates[:, 1]]
    if per_pair.min() < WARMUP_PER_PAIR:
        # Warm-up: the least judged pairs first, ties broken at random.
        keys = per_pair + rng.random(per_pair.shape[0])
        picked = np.argsort(keys)[:count]
        if count > picked.shape[0]:
            picked = np.concatenate([picked, rng.integers(0, candidates.shape[0], count - picked.shape[0])])
        return [tuple(int(x) for x in candidates[c]) for c in picked]

    estimate = estimate or fit(wins)
    explore = rng.random(count) < exploration
    chosen: list[tuple[int, int]] = [tuple(int(x) for x in candidates[c])
                                     for c in rng.integers(0, candidates.shape[0], int(explore.sum()))]
    greedy = count - len(chosen)
    vectors, unresolved = _contrasts(goal, estimate)
    if not unresolved.any():
        # Goal met: spend what is asked on the contrasts closest to flipping (all of them).
        unresolved = np.ones_like(unresolved)
    vectors = vectors[unresolved]
    covariance = estimate.covariance / ELO_PER_NAT**2  # natural-log units, like the information
    nats = (estimate.ratings - ELO_INITIAL_RATING) / ELO_PER_NAT
    p = expit(nats[candidates[:, 0]] - nats[candidates[:, 1]])
    info = p * (1 - p)  # information of one judgment of each candidate pair
    first, second = candidates[:, 0], candidates[:, 1]
    # Each contrast's current variance, kept up to date as pairs are taken.
    variance = np.einsum("cm,mk,ck->c", vectors, covariance, vectors)
    # Large batches take a pair several judgments at a time (a 4 x models-th of the batch per
    # step): the same rule at a fraction of the cost.
    step = max(1, greedy // (4 * m))
    while greedy > 0:
        take = min(step, greedy)
        greedy -= take
        cov_u = covariance[:, first] - covariance[:, second]  # (models, pairs): Σ u for each pair
        u_cov_u = cov_u[first, np.arange(first.shape[0])] - cov_u[second, np.arange(first.shape[0])]
        v_cov_u = vectors @ cov_u  # (contrasts, pairs)
        shrink = take * info[None, :] * v_cov_u**2 / (1 + take * info * u_cov_u)[None, :]
        current = np.clip(variance, 1e-300, None)
        after = np.clip(current[:, None] - shrink, 0, None)
        gain = (np.sqrt(current)[:, None] - np.sqrt(after)).sum(axis=0)
        best = int(np.argmax(gain + 1e-12 * rng.random(gain.shape[0])))  # random among equals
        chosen.extend([(int(first[best]), int(second[best]))] * take)
        column = cov_u[:, best]
        denominator = 1 + take * info[best] * u_cov_u[best]
        covariance = covariance - take * info[best] * np.outer(column, column) / denominator
        variance = variance - shrink[:, best]
    order = rng.permutation(len(chosen))
    return [chosen[i] for i in order]


def batch_size(judgments: int, *, models: int) -> int:
    """Judgments to collect between refits: a few per model at first, then 2 % of the total, so
    the number of refits grows only logarithmically with the round."""
    return max(2 * models, int(math.ceil(0.02 * judgments)))
