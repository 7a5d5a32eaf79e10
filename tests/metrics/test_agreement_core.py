"""The agreement core on hand-computed cases."""
import math

import numpy as np
import pandas as pd
import pytest

from stats.metric_agreement import (
    NO_PICK,
    PICK_A,
    PICK_B,
    accuracy_by_level,
    binomial_interval,
    clopper_pearson_interval,
    compare_with_humans,
    pick_by_score,
    pick_from_verdicts,
    plot_metric_agreement,
    system_correlation,
    wilson_interval,
)


def test_wilson_interval_by_hand():
    # 8 of 10, z = 1.959964: centre (0.8 + z²/20) / (1 + z²/10), half width
    # z sqrt(0.8·0.2/10 + z²/400) / (1 + z²/10).
    z = 1.959963984540054
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.016 + z * z / 400) / (1 + z * z / 10)
    assert wilson_interval(8, 10) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    low, high = wilson_interval(0, 10)
    assert low == 0 and high == pytest.approx(z * z / 10 / (1 + z * z / 10))
    assert all(math.isnan(bound) for bound in wilson_interval(0, 0))


def test_clopper_pearson_interval_by_hand():
    # Exact bounds: 0 of n has upper bound 1 - (alpha/2)^(1/n); n of n has lower bound (alpha/2)^(1/n).
    assert clopper_pearson_interval(0, 10) == pytest.approx((0.0, 1 - 0.025 ** 0.1))
    assert clopper_pearson_interval(10, 10) == pytest.approx((0.025 ** 0.1, 1.0))
    assert clopper_pearson_interval(8, 10) == pytest.approx((0.4439, 0.9748), abs=1e-4)
    # 1 of 2: the bounds solve P(X >= 1) = 0.025 and P(X <= 1) = 0.025 for p.
    low, high = clopper_pearson_interval(1, 2)
    assert 1 - (1 - low) ** 2 == pytest.approx(0.025)
    assert 1 - high ** 2 == pytest.approx(0.025)
    assert binomial_interval(8, 10, method="clopper-pearson") == clopper_pearson_interval(8, 10)


@pytest.mark.parametrize("args", [(11, 10), (-1, 3)])
def test_intervals_refuse_impossible_counts(args):
    with pytest.raises(ValueError, match="successes must lie"):
        wilson_interval(*args)
    with pytest.raises(ValueError, match="unknown interval"):
        binomial_interval(1, 2, method="normal")


def test_pick_by_score_takes_the_higher_and_flips_a_seeded_coin_on_ties():
    picks = pick_by_score([0.9, 0.1, 0.5], [0.2, 0.3, 0.7], np.random.default_rng(0))
    assert picks.tolist() == [PICK_A, PICK_B, PICK_B]
    ties = pick_by_score(np.zeros(2000), np.zeros(2000), np.random.default_rng(5))
    again = pick_by_score(np.zeros(2000), np.zeros(2000), np.random.default_rng(5))
    np.testing.assert_array_equal(ties, again)
    assert 0.45 < ties.mean() < 0.55


def test_pick_from_verdicts_breaks_ties_at_random_and_marks_unjudged_pairs():
    picks = pick_from_verdicts(["model_a", "model_b", None] + ["tie"] * 1000, np.random.default_rng(1))
    assert picks[:3].tolist() == [PICK_A, PICK_B, NO_PICK]
    assert set(picks[3:].tolist()) == {PICK_A, PICK_B}
    assert 0.45 < picks[3:].mean() < 0.55


def test_accuracy_by_level_by_hand():
    # Three 5/5 pairs (two right), two 4/5 (one right), one 3/5 (wrong), one 3/5 not picked.
    human_a = np.array([1, 1, 0, 0, 1, 1, 0], dtype=bool)
    picks = np.array([1, 1, 1, 0, 0, 0, NO_PICK], dtype=np.int8)
    majority = np.array([5, 5, 5, 4, 4, 3, 3])
    votes = np.full(7, 5)
    table = accuracy_by_level(human_a, picks, majority, votes).set_index("level")
    assert table.index.tolist() == ["5/5", "4/5", "3/5", "all"]
    assert table["pairs"].tolist() == [3, 2, 1, 6]
    assert table["correct"].tolist() == [2, 1, 0, 3]
    assert table["accuracy"].tolist() == pytest.approx([2 / 3, 1 / 2, 0, 1 / 2])
    assert (table.loc["all", "ci_low"], table.loc["all", "ci_high"]) == pytest.approx(wilson_interval(3, 6))


def test_system_correlation_by_hand():
    # Models x, y, z; humans: x won 9 of 10 votes overall, y 5 of 10, z 1 of 10 -> x > y > z.
    # The metric: x picked 1 of 2, y 2 of 2, z 0 of 2 -> y > x > z; rho = 1 - 6·2/(3·8) = 0.5.
    model_a, model_b = ["x", "x", "y"], ["y", "z", "z"]
    votes_a, votes_b = np.array([4, 5, 4]), np.array([1, 0, 1])
    picks = np.array([PICK_B, PICK_A, PICK_A], dtype=np.int8)
    result = system_correlation(model_a, model_b, votes_a, votes_b, picks)
    assert result.models.loc[["x", "y", "z"], "human_win_share"].tolist() == pytest.approx([0.9, 0.5, 0.1])
    assert result.models.loc[["x", "y", "z"], "metric_win_share"].tolist() == pytest.approx([0.5, 1.0, 0.0])
    assert result.rho == pytest.approx(0.5)
    assert 0 < result.p_value <= 1
    two_models = system_correlation(["x"], ["y"], np.array([3]), np.array([2]), np.array([PICK_A]))
    assert math.isnan(two_models.rho) and "three or more models" in two_models.note


def _pairs():
    return pd.DataFrame({
        "model_a": ["x", "x", "y", "x"], "model_b": ["y", "z", "z", "y"],
        "human_winner": ["model_a", "model_a", "model_b", "model_b"],
        "majority": [5, 4, 3, 5], "votes": [5, 5, 5, 5],
        "votes_a": [5, 4, 2, 0], "votes_b": [0, 1, 3, 5],
    })


def test_compare_with_humans_and_its_report(tmp_path):
    pairs = _pairs()
    result = compare_with_humans(
        pairs, {"right": np.array([1, 1, 0, 0], dtype=np.int8), "wrong": np.array([0, 0, 1, 1], dtype=np.int8)},
        labels={"right": "Always right"},
    )
    report = result.to_dict()
    right, wrong = report["metrics"]
    assert right["label"] == "Always right" and wrong["label"] == "wrong"
    assert right["accuracy"]["all"]["accuracy"] == 1.0 and wrong["accuracy"]["all"]["accuracy"] == 0.0
    assert right["accuracy"]["5/5"]["pairs"] == 2 and right["accuracy"]["3/5"]["pairs"] == 1
    # Human shares of judgments won: x 9/15, y 7/15, z 4/10 (x > y > z). Following the majority
    # gives x 2/3, y 1/3, z 1/2 (x > z > y): rho = 1 - 6·2/24 = 0.5; the opposite picks give
    # x 1/3, y 2/3, z 1/2 (y > z > x): rho = 1 - 6·6/24 = -0.5.
    assert right["system"]["models"]["x"]["human_win_share"] == pytest.approx(9 / 15)
    assert right["system"]["models"]["z"]["metric_win_share"] == pytest.approx(1 / 2)
    assert right["system"]["spearman_rho"] == pytest.approx(0.5)
    assert wrong["system"]["spearman_rho"] == pytest.approx(-0.5)
    figure = plot_metric_agreement(result, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(figure.axes[0].patches) == 2 * 4  # two metrics x (three levels + all)


def test_compare_with_humans_refuses_bad_tables():
    with pytest.raises(ValueError, match="lack the columns votes_a"):
        compare_with_humans(_pairs().drop(columns="votes_a"), {})
    tied = _pairs().assign(human_winner=["tie", "model_a", "model_a", "model_a"])
    with pytest.raises(ValueError, match="leave tied pairs out"):
        compare_with_humans(tied, {})
    with pytest.raises(ValueError, match="3 picks for 4 pairs"):
        compare_with_humans(_pairs(), {"m": np.array([1, 1, 1], dtype=np.int8)})
