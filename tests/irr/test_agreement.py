"""Per-item annotator agreement: hand-computed rho, best pair, tie-break, keep/drop, validation."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from stats import irr

from .builders import IDENTITY_5, rankings_frame


def items_by_id(result: irr.Agreement) -> dict:
    return {row["item_id"]: row for row in result.items_frame().to_dict("records")}


def pair_rhos(result: irr.Agreement) -> dict:
    frame = result.pairs_frame()
    return {(r.item_id, r.annotator_a, r.annotator_b): r.rho for r in frame.itertuples(index=False)}


def test_hand_computed_rho_for_every_pair_and_the_best_pair():
    # a-b: d = (-1, 1, 0, 0, 0), sum d^2 = 2, rho = 1 - 6*2/120 = 0.9
    # a-c: c reverses a, sum d^2 = 16+4+0+4+16 = 40, rho = 1 - 240/120 = -1
    # b-c: d = (-3, -3, 0, 2, 4), sum d^2 = 38, rho = 1 - 228/120 = -0.9
    rankings = rankings_frame({"img": {"a": IDENTITY_5, "b": [2, 1, 3, 4, 5], "c": [5, 4, 3, 2, 1]}})
    result = irr.agreement(rankings)
    assert pair_rhos(result) == {("img", "a", "b"): 0.9, ("img", "a", "c"): -1.0, ("img", "b", "c"): -0.9}
    row = items_by_id(result)["img"]
    assert (row["annotator_a"], row["annotator_b"], row["best_rho"], row["kept"]) == ("a", "b", 0.9, True)


def test_three_and_four_review_items():
    # k=3: swap of the last two, sum d^2 = 2, rho = 1 - 12/24 = 0.5
    # k=4: two swaps, sum d^2 = 4, rho = 1 - 24/60 = 0.6
    rankings = rankings_frame({"three": {"a": [1, 2, 3], "b": [1, 3, 2]},
                               "four": {"a": [1, 2, 3, 4], "b": [2, 1, 4, 3]}})
    rows = items_by_id(irr.agreement(rankings))
    assert rows["three"]["best_rho"] == 0.5
    assert rows["three"]["reviews"] == 3
    assert rows["four"]["best_rho"] == 0.6
    assert rows["four"]["reviews"] == 4


def test_alignment_is_by_review_id_not_row_order():
    # b lists the reviews in reverse order; by review id b ranks exactly like a.
    rankings = pd.DataFrame({
        "item_id": ["img"] * 6,
        "annotator_id": ["a", "a", "a", "b", "b", "b"],
        "review_id": ["r1", "r2", "r3", "r3", "r2", "r1"],
        "rank": [1, 2, 3, 3, 2, 1],
    })
    assert items_by_id(irr.agreement(rankings))["img"]["best_rho"] == 1.0


def test_rho_exactly_at_the_threshold_is_kept():
    # sum d^2 = 8 for k=5 gives rho = 1 - 48/120 = 0.6 exactly; sum d^2 = 10 gives 0.5.
    rankings = rankings_frame({"at": {"a": IDENTITY_5, "b": [3, 2, 1, 4, 5]},
                               "also_at": {"a": IDENTITY_5, "b": [3, 1, 2, 5, 4]},
                               "just_below": {"a": IDENTITY_5, "b": [2, 3, 4, 1, 5]}})
    result = irr.agreement(rankings)
    rows = items_by_id(result)
    assert rows["at"]["best_rho"] == 0.6
    assert rows["at"]["kept"]
    # [3, 1, 2, 5, 4]: d = (2, -1, -1, 1, -1), sum d^2 = 8 -> also 0.6
    assert rows["also_at"]["best_rho"] == 0.6
    # [2, 3, 4, 1, 5]: d = (1, 1, 1, -3, 0), sum d^2 = 12 -> 0.4
    assert rows["just_below"]["best_rho"] == pytest.approx(0.4)
    assert not rows["just_below"]["kept"]
    assert irr.agreement(rankings, threshold=0.6).kept.tolist() == [True, True, False]
    assert irr.agreement(rankings, threshold=0.61).kept.tolist() == [False, False, False]
    assert irr.agreement(rankings, threshold=0.4).kept.tolist() == [True, True, True]


def test_tie_break_takes_the_pair_whose_ids_sort_first():
    # a-c and b-d both agree perfectly (rho 1); every other pair is lower. (a, c) < (b, d).
    rankings = rankings_frame({"img": {"d": [5, 4, 3, 2, 1], "b": [5, 4, 3, 2, 1], "c": IDENTITY_5,
                                       "a": IDENTITY_5}})
    row = items_by_id(irr.agreement(rankings))["img"]
    assert (row["annotator_a"], row["annotator_b"], row["best_rho"]) == ("a", "c", 1.0)


def test_tie_break_compares_ids_as_text_min_first_then_max():
    # w1-w2 and w1-w10 tie at 1: same min id "w1", and "w10" < "w2" as text -> (w1, w10).
    same_min = rankings_frame({"img": {"w2": IDENTITY_5, "w10": IDENTITY_5, "w1": IDENTITY_5}})
    row = items_by_id(irr.agreement(same_min))["img"]
    assert (row["annotator_a"], row["annotator_b"]) == ("w1", "w10")
    # w10-w2 and w1-w3 tie; w1 < w10 as text -> (w1, w3), although w10 appears first in the input.
    different_min = rankings_frame({"img": {"w10": IDENTITY_5, "w2": IDENTITY_5, "w1": [5, 4, 3, 2, 1],
                                            "w3": [5, 4, 3, 2, 1]}})
    row = items_by_id(irr.agreement(different_min))["img"]
    assert (row["annotator_a"], row["annotator_b"]) == ("w1", "w3")


def test_result_does_not_depend_on_row_order():
    rng = np.random.default_rng(7)
    items = {f"img{i}": {f"w{j}": list(rng.permutation(5) + 1) for j in rng.choice(9, size=4, replace=False)}
             for i in range(30)}
    rankings = rankings_frame(items)
    shuffled = rankings.iloc[rng.permutation(len(rankings))].reset_index(drop=True)
    first = irr.agreement(rankings).items_frame().set_index("item_id").sort_index()
    second = irr.agreement(shuffled).items_frame().set_index("item_id").sort_index()
    pd.testing.assert_frame_equal(first, second)


def test_items_with_varying_annotator_and_review_counts():
    rankings = rankings_frame({
        "two": {"a": IDENTITY_5, "b": [2, 1, 3, 4, 5]},                              # 0.9
        "three": {"a": IDENTITY_5, "b": [5, 4, 3, 2, 1], "c": [3, 2, 1, 4, 5]},      # a-c 0.6
        "four": {"a": [1, 2, 3], "b": [3, 2, 1], "c": [1, 3, 2], "d": [2, 1, 3]},     # 0.5 (a-c first)
        "lone": {"a": IDENTITY_5},
    })
    result = irr.agreement(rankings)
    rows = items_by_id(result)
    assert [rows[i]["annotators"] for i in ("two", "three", "four", "lone")] == [2, 3, 4, 1]
    assert rows["two"]["best_rho"] == 0.9
    assert (rows["three"]["annotator_a"], rows["three"]["annotator_b"], rows["three"]["best_rho"]) == ("a", "c", 0.6)
    assert (rows["four"]["annotator_a"], rows["four"]["annotator_b"], rows["four"]["best_rho"]) == ("a", "c", 0.5)
    lone = rows["lone"]
    assert math.isnan(lone["best_rho"])
    assert lone["annotator_a"] is None and not lone["evaluable"] and not lone["kept"]
    assert result.kept.tolist() == [True, True, False, False]
    # 1 + 3 + 6 pairs, none for the lone annotator.
    assert len(result.pairs_frame()) == 10


def test_threshold_outside_minus_one_to_one_is_rejected():
    with pytest.raises(ValueError, match="threshold"):
        irr.agreement(rankings_frame({"img": {"a": [1, 2], "b": [2, 1]}}), threshold=1.5)


# --------------------------------------------------------------------------- validation


def rejection(rankings: pd.DataFrame) -> irr.IRRInputError:
    with pytest.raises(irr.IRRInputError) as caught:
        irr.agreement(rankings)
    return caught.value


def test_repeated_rank_is_not_a_permutation():
    rankings = rankings_frame({"img": {"a": IDENTITY_5, "b": [1, 2, 2, 4, 5]}})
    error = rejection(rankings)
    assert (error.row, error.field) == (7, "rank")  # index label of b's second rank 2
    assert "item 'img', annotator 'b'" in str(error)
    assert "not a permutation of 1..5" in str(error)


def test_rank_outside_one_to_k():
    error = rejection(rankings_frame({"img": {"a": [1, 2, 3], "b": [0, 1, 2]}}))
    assert (error.row, error.field) == (3, "rank")
    assert "annotator 'b'" in str(error) and "outside 1..3" in str(error)
    error = rejection(rankings_frame({"img": {"a": [1, 2, 3], "b": [1, 2, 4]}}))
    assert (error.row, error.field) == (5, "rank")


def test_annotator_missing_a_review():
    rankings = rankings_frame({"img": {"a": [1, 2, 3]}})
    rankings = pd.concat([rankings, rankings_frame({"img": {"b": [1, 2]}})], ignore_index=True)
    error = rejection(rankings)
    assert error.field == "review_id"
    assert "item 'img', annotator 'b'" in str(error) and "missing 'r3'" in str(error)


def test_review_ranked_twice():
    rankings = pd.DataFrame({"item_id": ["img"] * 4, "annotator_id": ["a", "a", "b", "b"],
                             "review_id": ["r1", "r2", "r1", "r1"], "rank": [1, 2, 1, 2]})
    error = rejection(rankings)
    assert (error.row, error.field) == (3, "review_id")
    assert "annotator 'b'" in str(error) and "'r1' is ranked twice" in str(error)


def test_fractional_rank_and_missing_values():
    rankings = rankings_frame({"img": {"a": [1, 2], "b": [2.5, 1]}})
    error = rejection(rankings)
    assert (error.row, error.field) == (2, "rank") and "not an integer" in str(error)
    rankings = rankings_frame({"img": {"a": [1, 2], "b": [2, 1]}})
    rankings.loc[1, "annotator_id"] = None
    error = rejection(rankings)
    assert (error.row, error.field, error.reason) == (1, "annotator_id", "missing value")


def test_missing_column_and_empty_table():
    rankings = rankings_frame({"img": {"a": [1, 2], "b": [2, 1]}}).drop(columns="review_id")
    error = rejection(rankings)
    assert (error.row, error.field) == (irr.HEADER_ROW, "review_id")
    assert "header row" in str(error)
    error = rejection(pd.DataFrame(columns=["item_id", "annotator_id", "review_id", "rank"]))
    assert "no rows" in str(error)


def test_single_review_item_cannot_be_ranked():
    error = rejection(rankings_frame({"img": {"a": [1], "b": [1]}}))
    assert "at least 2" in str(error) and "'img'" in str(error)


def test_item_with_two_languages_is_rejected():
    rankings = rankings_frame({"img": {"a": [1, 2], "b": [2, 1]}}, languages={"img": "en"})
    rankings.loc[3, "language"] = "ja"
    error = rejection(rankings)
    assert (error.row, error.field) == (3, "language")
