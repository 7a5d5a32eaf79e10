"""Threshold sweep (paper Table 4 / Figure 4) on a hand-made set with known best-pair rho."""
from __future__ import annotations

import pytest

from stats import irr

from .builders import IDENTITY_5, rankings_frame, scores_frame

# Second annotator's ranks against the identity, with sum d^2 and rho = 1 - sum d^2 / 20 (k = 5).
SECOND_RANKINGS = {
    "p10": (IDENTITY_5, 1.0),           # sum d^2 = 0
    "p08": ([2, 1, 4, 3, 5], 0.8),      # 4
    "p06": ([3, 2, 1, 4, 5], 0.6),      # 8
    "p03": ([3, 1, 5, 2, 4], 0.3),      # 14
    "m05": ([3, 4, 5, 1, 2], -0.5),     # 30
    "z00": ([2, 5, 3, 1, 4], 0.0),      # 20
}
LANGUAGES = {"p10": "en", "p08": "ja", "p06": "en", "p03": "ja", "m05": "en", "z00": "ja", "lone": "en"}


def hand_made_rankings():
    items = {item: {"a": IDENTITY_5, "b": second} for item, (second, _) in SECOND_RANKINGS.items()}
    items["lone"] = {"a": IDENTITY_5}
    return rankings_frame(items, languages=LANGUAGES)


def test_best_rho_of_the_hand_made_items():
    result = irr.agreement(hand_made_rankings())
    expected = [rho for _, rho in SECOND_RANKINGS.values()]
    assert result.best_rho[:6].tolist() == pytest.approx(expected, abs=1e-15)


def test_sweep_kept_counts_and_mean_best_pair_rho():
    sweep = irr.threshold_sweep(irr.agreement(hand_made_rankings()))
    rows = {row["threshold"]: (row["kept"], row["mean_rho"]) for row in sweep.to_dict("records")}
    assert list(rows) == ["none", "<0", "0", "0.2", "0.4", "0.6", "0.8"]
    # "none": no filtering, all 7 items count; the mean is over the 6 that have a pair.
    assert rows["none"] == (7, pytest.approx(2.2 / 6))
    # "<0": a negative threshold keeps every evaluable item, including the one whose pair disagrees.
    assert rows["<0"] == (6, pytest.approx(2.2 / 6))
    assert rows["0"] == (5, pytest.approx(2.7 / 5))
    assert rows["0.2"] == (4, pytest.approx(2.7 / 4))
    assert rows["0.4"] == (3, pytest.approx(0.8))
    assert rows["0.6"] == (3, pytest.approx(0.8))  # 0.6 exactly is kept
    assert rows["0.8"] == (2, pytest.approx(0.9))


def test_sweep_by_language():
    sweep = irr.threshold_sweep(irr.agreement(hand_made_rankings()), by_language=True)
    rows = {(row["language"], row["threshold"]): (row["kept"], row["mean_rho"]) for row in sweep.to_dict("records")}
    # en: p10 (1.0), p06 (0.6), m05 (-0.5), lone; ja: p08 (0.8), p03 (0.3), z00 (0.0)
    assert rows[("en", "none")] == (4, pytest.approx(1.1 / 3))
    assert rows[("en", "<0")] == (3, pytest.approx(1.1 / 3))
    assert rows[("en", "0")] == (2, pytest.approx(0.8))
    assert rows[("ja", "none")] == (3, pytest.approx(1.1 / 3))
    assert rows[("ja", "0.4")] == (1, pytest.approx(0.8))
    assert rows[("ja", "0.8")] == (1, pytest.approx(0.8))
    assert rows[("en", "0.8")] == (1, pytest.approx(1.0))


def test_sweep_reports_the_model_over_the_same_kept_items():
    # The model ranks exactly like annotator a: its item score is (1 + rho_ab) / 2.
    rankings = hand_made_rankings()
    scores = scores_frame({item: {"same-as-a": IDENTITY_5} for item in [*SECOND_RANKINGS, "lone"]})
    result = irr.agreement(rankings)
    correlations = irr.model_correlations(result, scores)
    sweep = irr.threshold_sweep(result, correlations=correlations).set_index("threshold")
    model_column = "mean_rho[same-as-a]"
    assert sweep.loc["none", model_column] == pytest.approx((1 + 0.9 + 0.8 + 0.65 + 0.25 + 0.5) / 6)
    assert sweep.loc["0.6", model_column] == pytest.approx(0.9)
    assert sweep.loc["0.8", model_column] == pytest.approx(0.95)
    # At the report threshold the sweep value is the model's Table 2 score.
    summary = irr.model_summary(correlations, by_language=False)
    assert summary.loc[0, "mean_rho"] == pytest.approx(sweep.loc["0.6", model_column])
    assert summary.loc[0, "items"] == 3


def test_json_threshold_values():
    assert [cut.json_value for cut in irr.SWEEP_THRESHOLDS] == ["none", "<0", 0.0, 0.2, 0.4, 0.6, 0.8]
