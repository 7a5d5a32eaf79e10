"""The active sampling core: the fit and its covariance, the goals' stopping test, the pair-choice
rule, and the coverage of its intervals under the adaptive design (a small simulation)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stats.active_sampling import (
    ELO_PER_NAT,
    WARMUP_PER_PAIR,
    Estimate,
    Goal,
    all_pairs,
    batch_size,
    choose_pairs,
    fit,
    progress,
)
from stats.ratings import bradley_terry, encode_battles


def expected_wins(ratings, games: float) -> np.ndarray:
    gap = (np.asarray(ratings)[:, None] - np.asarray(ratings)[None, :]) / ELO_PER_NAT
    wins = games / (1 + np.exp(-gap))
    np.fill_diagonal(wins, 0)
    return wins


def simulate(truth, pairs: np.ndarray, rng) -> np.ndarray:
    m = len(truth)
    gap = (truth[pairs[:, 0]] - truth[pairs[:, 1]]) / ELO_PER_NAT
    first = rng.random(pairs.shape[0]) < 1 / (1 + np.exp(-gap))
    wins = np.zeros((m, m))
    np.add.at(wins, (np.where(first, pairs[:, 0], pairs[:, 1]), np.where(first, pairs[:, 1], pairs[:, 0])), 1)
    return wins


def test_the_fit_is_the_bradley_terry_mle_of_ratings_py():
    battles = pd.DataFrame({"model_a": ["a", "a", "b", "c", "c", "a", "b"],
                            "model_b": ["b", "c", "c", "a", "b", "b", "a"],
                            "winner": ["model_a", "model_b", "model_a", "model_b", "model_b", "model_a", "model_b"]})
    encoded = encode_battles(battles)
    ours = fit(encoded.win_matrix, prior_ties=0)
    assert np.allclose(ours.ratings, bradley_terry(encoded).ratings)
    assert ours.judgments == 7


def test_on_bradley_terry_counts_the_sandwich_is_the_inverse_information():
    truth = np.array([1200.0, 1100.0, 1000.0, 900.0])
    wins = expected_wins(truth, games=1000)
    robust, model = fit(wins, sandwich=True, prior_ties=0), fit(wins, prior_ties=0)
    assert np.allclose(robust.ratings, truth - truth.mean() + 1000, atol=1e-6)
    assert np.allclose(robust.covariance, model.covariance, rtol=1e-6)
    # Centred ratings: the covariance sums to zero along (1, ..., 1).
    assert np.allclose(model.covariance.sum(axis=1), 0, atol=1e-9)
    # One pair of nearly equal models over 1000 games: var of the difference ~ 4/1000 nats²
    # shrunk by the other paths; the centred ratings' variances are of that order.
    assert 3 < np.sqrt(model.covariance[0, 0]) < 15


@pytest.mark.parametrize("goal, separated, apart", [
    (Goal(), "3 of 3 adjacent pairs separated", "0 of 3 adjacent pairs separated"),
    (Goal(kind="top_k", k=2), "4 of 4 pairs across the top 2 separated", "0 of 4 pairs across the top 2 separated"),
    (Goal(kind="width", width=40), "4 of 4 intervals narrower than 40 Elo points",
     "0 of 4 intervals narrower than 40 Elo points"),
])
def test_progress_counts_the_resolved_contrasts(goal, separated, apart):
    far = fit(expected_wins([1300.0, 1100.0, 900.0, 700.0], games=2000))
    assert progress(goal, far).describe() == separated and progress(goal, far).met
    close = fit(expected_wins([1003.0, 1002.0, 1001.0, 1000.0], games=5))
    assert progress(goal, close).describe() == apart and not progress(goal, close).met


def test_goals_are_checked_and_round_trip():
    with pytest.raises(ValueError, match="unknown goal"):
        Goal(kind="best")
    with pytest.raises(ValueError, match="positive width"):
        Goal(kind="width")
    with pytest.raises(ValueError, match="k of at least 1"):
        Goal(kind="top_k", k=0)
    goal = Goal(kind="top_k", k=3, level=0.9)
    assert Goal.from_dict(goal.to_dict()) == goal
    assert goal.describe() == "find the top 3 at 90 %"
    assert abs(Goal().z - 1.959964) < 1e-6


def test_warm_up_serves_the_least_judged_pairs_first():
    rng = np.random.default_rng(0)
    wins = np.zeros((4, 4))
    wins[0, 1] = 5  # (0, 1) judged already
    chosen = choose_pairs(wins, Goal(), count=5, rng=rng)
    assert sorted(chosen) == [(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert WARMUP_PER_PAIR >= 1


def test_judgments_go_to_the_unresolved_adjacent_pair():
    # 0 and 1 are far apart and already separated; 1 and 2 are close: the rule asks about them
    # (directly, or through model 0 only as exploration).
    wins = expected_wins([1400.0, 1000.0, 990.0], games=40)
    chosen = choose_pairs(wins, Goal(), count=200, rng=np.random.default_rng(1), exploration=0.0)
    counts = {pair: chosen.count(pair) for pair in set(chosen)}
    assert counts.get((1, 2), 0) > 150
    explored = choose_pairs(wins, Goal(), count=2000, rng=np.random.default_rng(1), exploration=0.3)
    others = sum(1 for pair in explored if pair != (1, 2))
    assert 0.15 < others / 2000 < 0.3  # about 2/3 of the exploration share lands on other pairs


def test_the_same_seed_draws_the_same_pairs():
    wins = expected_wins([1100.0, 1050.0, 1000.0, 950.0], games=10)
    first = choose_pairs(wins, Goal(), count=30, rng=np.random.default_rng(5))
    assert first == choose_pairs(wins, Goal(), count=30, rng=np.random.default_rng(5))
    assert first != choose_pairs(wins, Goal(), count=30, rng=np.random.default_rng(6))


def test_batches_grow_with_the_round():
    assert batch_size(0, models=20) == 40
    assert batch_size(10_000, models=20) == 200


def test_intervals_keep_their_coverage_under_the_adaptive_design():
    """A Bradley–Terry crowd, the active rule choosing pairs from the judgments so far: the 95 %
    intervals of the centred ratings hold the truth about 95 % of the time at a fixed number of
    judgments (the likelihood ignores how pairs were chosen from past outcomes)."""
    truth = np.array([1120.0, 1080.0, 1040.0, 1000.0, 960.0, 900.0])
    centred = truth - truth.mean() + 1000
    m = truth.shape[0]
    hits = []
    for seed in range(50):
        rng = np.random.default_rng(seed)
        wins = simulate(truth, np.repeat(all_pairs(m), 2, axis=0), rng)  # the warm-up
        for _batch in range(20):
            pairs = np.array(choose_pairs(wins, Goal(), count=100, rng=rng))
            wins += simulate(truth, pairs, rng)
        low, high = fit(wins).interval(0.95)
        hits.extend((low <= centred) & (centred <= high))
    coverage = float(np.mean(hits))
    assert 0.9 <= coverage <= 0.99, coverage


def test_estimate_interval_is_symmetric_around_the_rating():
    estimate = Estimate(ratings=np.array([1010.0, 990.0]), covariance=np.array([[25.0, -25.0], [-25.0, 25.0]]),
                        judgments=10)
    low, high = estimate.interval(0.95)
    assert np.allclose(high - estimate.ratings, estimate.ratings - low)
    assert np.allclose(high - low, 2 * 1.959964 * 5, atol=1e-4)
    assert all_pairs(3).tolist() == [[0, 1], [0, 2], [1, 2]]
