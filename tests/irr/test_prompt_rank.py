"""Prompt rank (the level a review was generated for) against human ranks (paper Figure 3)."""
from __future__ import annotations

import pytest

from stats import irr

from .builders import rankings_frame


def figure_3_rankings():
    # x: prompt order r1, r2, r3; a follows it (rho 1), b swaps the top two (0.5), c reverses (-1).
    #    Best pair (a, b) at 0.5 -> dropped at 0.6.
    # y: prompt ranks 3, 1, 2 for r1, r2, r3; a and b both follow the prompt (rho 1) -> kept.
    return rankings_frame(
        {"x": {"a": [1, 2, 3], "b": [2, 1, 3], "c": [3, 2, 1]}, "y": {"a": [3, 1, 2], "b": [3, 1, 2]}},
        prompt_ranks={"x": [1, 2, 3], "y": [3, 1, 2]})


def test_distribution_of_human_rank_per_prompt_rank():
    analysis = irr.prompt_rank_analysis(irr.agreement(figure_3_rankings()))
    table = analysis.by_prompt_rank.set_index("prompt_rank")
    assert table[["human_rank_1", "human_rank_2", "human_rank_3"]].values.tolist() == [[3, 1, 1], [1, 4, 0],
                                                                                       [1, 0, 4]]
    assert table["rankings"].tolist() == [5, 5, 5]
    assert table["mean_human_rank"].tolist() == pytest.approx([1.6, 1.8, 2.6])
    kept = analysis.by_prompt_rank_kept.set_index("prompt_rank")
    assert kept[["human_rank_1", "human_rank_2", "human_rank_3"]].values.tolist() == [[2, 0, 0], [0, 2, 0],
                                                                                      [0, 0, 2]]


def test_rho_between_prompt_rank_and_each_annotator():
    analysis = irr.prompt_rank_analysis(irr.agreement(figure_3_rankings()))
    per_annotation = {(r.item_id, r.annotator_id): r.rho for r in analysis.annotation_rhos.itertuples()}
    assert per_annotation == {("x", "a"): 1.0, ("x", "b"): 0.5, ("x", "c"): -1.0, ("y", "a"): 1.0, ("y", "b"): 1.0}
    per_annotator = analysis.by_annotator.set_index("annotator_id")
    assert per_annotator["mean_rho"].to_dict() == {"a": 1.0, "b": 0.75, "c": -1.0}
    assert per_annotator["items"].to_dict() == {"a": 2, "b": 2, "c": 1}


def test_prompt_rank_against_the_top_pair_across_thresholds():
    result = irr.agreement(figure_3_rankings())
    analysis = irr.prompt_rank_analysis(result)
    assert analysis.correlations.rho[0].tolist() == [0.75, 1.0]
    sweep = irr.threshold_sweep(result, prompt=analysis.correlations).set_index("threshold")
    assert sweep.loc["none", "mean_rho_prompt_rank"] == pytest.approx(0.875)
    assert sweep.loc["0.4", "mean_rho_prompt_rank"] == pytest.approx(0.875)
    assert sweep.loc["0.6", "mean_rho_prompt_rank"] == 1.0


def test_prompt_rank_must_be_one_per_review_and_a_permutation():
    rankings = figure_3_rankings()
    rankings.loc[4, "prompt_rank"] = 3  # x, b, r2: was 2
    with pytest.raises(irr.IRRInputError) as caught:
        irr.agreement(rankings)
    assert (caught.value.row, caught.value.field) == (4, "prompt_rank")
    rankings = rankings_frame({"x": {"a": [1, 2, 3], "b": [1, 2, 3]}}, prompt_ranks={"x": [1, 1, 3]})
    with pytest.raises(irr.IRRInputError, match="not a permutation of 1..3"):
        irr.agreement(rankings)
