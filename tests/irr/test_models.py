"""Model correlation with the top-agreeing pair, human reference, and a model as an extra annotator."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from stats import irr

from .builders import IDENTITY_5, rankings_frame, scores_frame

# Best pair (a, b) with rho 0.9; c disagrees with both.
THREE_ANNOTATORS = {"a": IDENTITY_5, "b": [2, 1, 3, 4, 5], "c": [5, 4, 3, 2, 1]}


def correlations_for(rankings: pd.DataFrame, scores: pd.DataFrame, threshold: float = 0.6):
    result = irr.agreement(rankings, threshold=threshold)
    return irr.model_correlations(result, scores)


def test_tied_scores_use_average_ranks():
    # Scores 10, 20, 20, 30, 40 -> ranks 1, 2.5, 2.5, 4, 5 (centred: -2, -.5, -.5, 1, 2; sum of squares 9.5).
    # With a (centred -2..2, sum of squares 10): covariance sum 9.5 -> rho = 9.5 / sqrt(95) = sqrt(0.95).
    # With b = 2, 1, 3, 4, 5 (centred -1, -2, 0, 1, 2): covariance sum 8 -> rho = 8 / sqrt(95).
    rankings = rankings_frame({"img": THREE_ANNOTATORS})
    scores = scores_frame({"img": {"lm": [10, 20, 20, 30, 40]}})
    correlations = correlations_for(rankings, scores)
    assert correlations.rho_a[0, 0] == pytest.approx(math.sqrt(0.95), abs=1e-12)
    assert correlations.rho_b[0, 0] == pytest.approx(8 / math.sqrt(95), abs=1e-12)
    assert correlations.rho[0, 0] == pytest.approx(17.5 / (2 * math.sqrt(95)), abs=1e-12)
    # The same as scipy's tie-aware Spearman.
    tied = [10, 20, 20, 30, 40]
    assert correlations.rho_a[0, 0] == pytest.approx(spearmanr(tied, IDENTITY_5).statistic, abs=1e-12)
    assert correlations.rho_b[0, 0] == pytest.approx(spearmanr(tied, [2, 1, 3, 4, 5]).statistic, abs=1e-12)


def test_lower_score_is_better_and_rank_column_is_accepted():
    rankings = rankings_frame({"img": THREE_ANNOTATORS})
    # Ascending perplexity in annotator a's order: the model agrees with a (1) and b (0.9).
    perplexity = correlations_for(rankings, scores_frame({"img": {"lm": [1.1, 2.2, 3.3, 4.4, 5.5]}}))
    assert perplexity.rho[0, 0] == pytest.approx(0.95)
    reversed_scores = correlations_for(rankings, scores_frame({"img": {"lm": [5.5, 4.4, 3.3, 2.2, 1.1]}}))
    assert reversed_scores.rho[0, 0] == pytest.approx(-0.95)
    ranks_with_ties = correlations_for(rankings, scores_frame({"img": {"judge": [1, 2, 2, 4, 5]}}, value="rank"))
    assert ranks_with_ties.rho_a[0, 0] == pytest.approx(math.sqrt(0.95), abs=1e-12)


def test_summary_is_the_mean_over_kept_items_per_model_and_language():
    rankings = rankings_frame(
        {"en1": THREE_ANNOTATORS,                                   # best 0.9, kept
         "en2": {"a": IDENTITY_5, "b": [3, 4, 5, 1, 2]},            # -0.5, dropped
         "ja1": {"a": IDENTITY_5, "b": [3, 2, 1, 4, 5]},            # 0.6, kept
         "ja2": {"a": IDENTITY_5}},                                 # lone annotator
        languages={"en1": "en", "en2": "en", "ja1": "ja", "ja2": "ja"})
    scores = scores_frame({
        "en1": {"lm": [1, 2, 3, 4, 5], "judge": [5, 4, 3, 2, 1]},
        "en2": {"lm": [1, 2, 3, 4, 5], "judge": [1, 2, 3, 4, 5]},
        "ja1": {"lm": [1, 2, 3, 4, 5]},
        "ja2": {"lm": [1, 2, 3, 4, 5]},
    })
    correlations = correlations_for(rankings, scores)
    summary = irr.model_summary(correlations)
    rows = {(r["model"], r["language"]): (r["mean_rho"], r["items"]) for r in summary.to_dict("records")}
    assert rows[("lm", "en")] == (pytest.approx(0.95), 1)      # (1 + 0.9) / 2 on en1 only
    assert rows[("lm", "ja")] == (pytest.approx(0.8), 1)       # (1 + 0.6) / 2 on ja1
    assert rows[("judge", "en")] == (pytest.approx(-0.95), 1)
    assert rows[("judge", "ja")][1] == 0 and math.isnan(rows[("judge", "ja")][0])
    reference = irr.human_reference(correlations.agreement)
    assert reference.to_dict("records") == [{"language": "en", "mean_rho": 0.9, "items": 1},
                                            {"language": "ja", "mean_rho": 0.6, "items": 1}]
    per_item = correlations.frame()
    assert len(per_item) == 6  # scored (model, item) pairs
    assert per_item.set_index(["model", "item_id"]).loc[("lm", "en2"), "rho"] == pytest.approx((1 - 0.5) / 2)


def test_language_may_come_from_the_model_scores():
    rankings = rankings_frame({"x": {"a": [1, 2, 3], "b": [1, 2, 3]}, "y": {"a": [1, 2, 3], "b": [1, 2, 3]}})
    scores = scores_frame({"x": {"lm": [1, 2, 3]}, "y": {"lm": [3, 2, 1]}}, languages={"x": "en", "y": "ja"})
    summary = irr.model_summary(correlations_for(rankings, scores))
    assert summary[["model", "language", "mean_rho", "items"]].values.tolist() == [["lm", "en", 1.0, 1],
                                                                                   ["lm", "ja", -1.0, 1]]


def test_constant_scores_have_no_rho_and_are_left_out():
    rankings = rankings_frame({"x": {"a": [1, 2, 3], "b": [1, 2, 3]}, "y": {"a": [1, 2, 3], "b": [1, 2, 3]}})
    scores = scores_frame({"x": {"lm": [7, 7, 7]}, "y": {"lm": [1, 2, 3]}})
    correlations = correlations_for(rankings, scores)
    assert math.isnan(correlations.rho[0, 0])
    summary = irr.model_summary(correlations)
    assert summary.to_dict("records") == [{"model": "lm", "mean_rho": 1.0, "items": 1}]


@pytest.mark.parametrize(
    ("scores", "row", "field", "fragment"),
    [
        (scores_frame({"img": {"lm": [1, 2, 3, 4]}}), 0, "review_id", "scores 4 of the 5 reviews"),
        (scores_frame({"other": {"lm": [1, 2, 3, 4, 5]}}), 0, "item_id", "'other' has no human rankings"),
        (scores_frame({"img": {"lm": [1, 2, 3, 4, 5]}}, reviews={"img": ["r1", "r2", "r3", "r4", "r9"]}), 4,
         "review_id", "no review 'r9'"),
        (scores_frame({"img": {"lm": [1, 2, 3, 4, 5]}}, reviews={"img": ["r1", "r2", "r3", "r4", "r4"]}), 4,
         "review_id", "twice"),
        (scores_frame({"img": {"lm": [1, 2, "x", 4, 5]}}), 2, "score", "not a finite number"),
        (scores_frame({"img": {"lm": [1, 2, 3, 4, 5]}}).assign(rank=1), irr.HEADER_ROW, "score", "exactly one"),
    ],
)
def test_model_score_validation(scores, row, field, fragment):
    result = irr.agreement(rankings_frame({"img": THREE_ANNOTATORS}))
    with pytest.raises(irr.IRRInputError) as caught:
        irr.model_correlations(result, scores)
    error = caught.value
    assert (error.row, error.field, error.source) == (row, field, irr.MODEL_SCORES_SOURCE)
    assert fragment in str(error)


# --------------------------------------------------------------------------- extra annotator


def test_model_counted_as_an_extra_annotator_recomputes_the_best_pair():
    # Humans agree at 0.5 (d = 0, 1, 2, -2, -1; sum d^2 = 10), dropped at 0.6; the model ranks like a.
    rankings = rankings_frame({"img": {"a": IDENTITY_5, "b": [1, 3, 5, 2, 4]}, "other": THREE_ANNOTATORS})
    scores = scores_frame({"img": {"lm": [1, 2, 3, 4, 5]}})
    humans_only = irr.agreement(rankings)
    assert humans_only.best_rho[0] == 0.5 and not humans_only.kept[0]
    result, annotator = irr.extra_annotator_agreement(rankings, scores, model="lm")
    assert annotator == "model:lm"
    rows = result.items_frame().set_index("item_id")
    assert (rows.loc["img", "annotator_a"], rows.loc["img", "annotator_b"]) == ("a", "model:lm")
    assert rows.loc["img", "best_rho"] == 1.0 and rows.loc["img", "kept"]
    assert rows.loc["img", "annotators"] == 3
    # Items the model did not score keep their human annotators only.
    assert rows.loc["other", "annotators"] == 3 and rows.loc["other", "best_rho"] == 0.9
    sweep = irr.threshold_sweep(result).set_index("threshold")
    assert sweep.loc["0.6", "kept"] == 2
    assert sweep.loc["0.6", "mean_rho"] == pytest.approx(0.95)


def test_extra_annotator_with_ties_uses_tie_aware_rho():
    rankings = rankings_frame({"img": {"a": IDENTITY_5, "b": [5, 4, 3, 2, 1]}})
    scores = scores_frame({"img": {"lm": [10, 20, 20, 30, 40]}})
    result, annotator = irr.extra_annotator_agreement(rankings, scores, model="lm")
    pairs = result.pairs_frame().set_index(["annotator_a", "annotator_b"])["rho"]
    assert pairs[("a", "b")] == -1.0
    assert pairs[("a", annotator)] == pytest.approx(math.sqrt(0.95), abs=1e-12)
    assert pairs[("b", annotator)] == pytest.approx(-math.sqrt(0.95), abs=1e-12)
    assert result.best_rho[0] == pytest.approx(math.sqrt(0.95), abs=1e-12)


def test_model_annotator_id_avoids_human_ids():
    assert irr.model_annotator_id("lm", ["model:lm", "a"]) == "model:lm'"
    rankings = rankings_frame({"img": {"model:lm": [1, 2, 3], "b": [1, 2, 3]}})
    _, annotator = irr.extra_annotator_agreement(rankings, scores_frame({"img": {"lm": [3, 2, 1]}}), model="lm")
    assert annotator == "model:lm'"


def test_report_sweep_matches_table_4_semantics():
    rng = np.random.default_rng(3)
    items = {f"img{i}": {f"w{j}": list(rng.permutation(5) + 1) for j in range(3)} for i in range(40)}
    scores = scores_frame({item: {"lm": list(rng.normal(size=5))} for item in items})
    report = irr.irr_report(rankings_frame(items), scores)
    sweep = report.sweep.set_index("threshold")
    assert sweep.loc["0.6", "mean_rho"] == pytest.approx(report.human_reference.loc[0, "mean_rho"])
    assert sweep.loc["0.6", "mean_rho[lm]"] == pytest.approx(report.models.loc[0, "mean_rho"])
    assert sweep.loc["0.6", "kept"] == report.models.loc[0, "items"] == int(report.agreement.kept.sum())
