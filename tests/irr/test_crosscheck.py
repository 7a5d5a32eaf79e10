"""The vectorised core against a plain per-pair loop over scipy.stats.spearmanr."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from stats import irr

ANNOTATOR_POOL = ["w1", "w10", "w2", "ann", "Ann", "佐藤", "田中"]


def reference_agreement(rankings: pd.DataFrame, threshold: float) -> dict:
    """Per item: (best rho, best pair, kept), pairs in (min id, max id) text order, first maximum wins."""
    out = {}
    for item, group in rankings.groupby("item_id", sort=False):
        by_annotator = {a: g.set_index("review_id")["rank"] for a, g in group.groupby("annotator_id")}
        annotators = sorted(by_annotator, key=str)
        reviews = sorted(group["review_id"].unique(), key=str)
        best = None
        for a, b in itertools.combinations(annotators, 2):
            rho = spearmanr(by_annotator[a].loc[reviews], by_annotator[b].loc[reviews]).statistic
            if best is None or rho > best[0] + irr.RHO_TOLERANCE:
                best = (rho, (a, b))
        if best is None:
            out[item] = (math.nan, None, False)
        else:
            out[item] = (best[0], best[1], best[0] >= threshold - irr.RHO_TOLERANCE)
    return out


@st.composite
def ranking_sets(draw):
    rows = []
    for item in range(draw(st.integers(1, 8))):
        k = draw(st.integers(2, 6))
        annotators = draw(st.lists(st.sampled_from(ANNOTATOR_POOL), min_size=1, max_size=5, unique=True))
        for annotator in annotators:
            ranks = draw(st.permutations(range(1, k + 1)))
            rows += [(f"item{item}", annotator, f"rev{item}-{r}", rank) for r, rank in enumerate(ranks)]
    frame = pd.DataFrame(rows, columns=["item_id", "annotator_id", "review_id", "rank"])
    order = draw(st.permutations(range(len(frame))))
    return frame.iloc[list(order)].reset_index(drop=True)


def assert_matches_reference(rankings: pd.DataFrame, threshold: float) -> None:
    result = irr.agreement(rankings, threshold=threshold)
    expected = reference_agreement(rankings, threshold)
    for row in result.items_frame().to_dict("records"):
        rho, pair, kept = expected[row["item_id"]]
        if pair is None:
            assert not row["evaluable"] and math.isnan(row["best_rho"]) and not row["kept"]
            continue
        assert row["best_rho"] == pytest.approx(rho, abs=1e-12)
        assert (row["annotator_a"], row["annotator_b"]) == pair
        assert row["kept"] == kept


@settings(max_examples=40, deadline=None)
@given(rankings=ranking_sets(), threshold=st.sampled_from([-1.0, 0.0, 0.2, 0.5, 0.6, 0.8, 1.0]))
def test_agreement_matches_a_scipy_loop(rankings, threshold):
    assert_matches_reference(rankings, threshold)


# Constant model scores are part of the data on purpose; scipy warns about them.
@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
def test_agreement_and_model_rho_match_a_scipy_loop_on_seeded_random_data():
    rng = np.random.default_rng(2024)
    rows, score_rows = [], []
    for item in range(150):
        k = int(rng.integers(2, 8))
        annotators = rng.choice(ANNOTATOR_POOL, size=int(rng.integers(1, 6)), replace=False)
        for annotator in annotators:
            rows += [(f"i{item}", annotator, f"i{item}r{r}", rank) for r, rank in enumerate(rng.permutation(k) + 1)]
        # Small integer scores: many ties, sometimes all equal.
        score_rows += [(f"i{item}", "coarse", f"i{item}r{r}", float(s)) for r, s in enumerate(rng.integers(0, 3, k))]
        score_rows += [(f"i{item}", "fine", f"i{item}r{r}", s) for r, s in enumerate(rng.normal(size=k))]
    rankings = pd.DataFrame(rows, columns=["item_id", "annotator_id", "review_id", "rank"])
    scores = pd.DataFrame(score_rows, columns=["item_id", "model", "review_id", "score"])
    assert_matches_reference(rankings, irr.DEFAULT_THRESHOLD)

    result = irr.agreement(rankings)
    correlations = irr.model_correlations(result, scores)
    expected = reference_agreement(rankings, irr.DEFAULT_THRESHOLD)
    checked = 0
    for m, model in enumerate(correlations.models):
        for i, item in enumerate(result.table.item_ids):
            _, pair, _ = expected[item]
            if pair is None:
                assert math.isnan(correlations.rho[m, i])
                continue
            group = rankings[rankings["item_id"] == item]
            model_scores = scores[(scores["item_id"] == item) & (scores["model"] == model)].set_index("review_id")
            reviews = model_scores.index
            rhos = [spearmanr(model_scores["score"], group[group["annotator_id"] == a].set_index("review_id")
                              .loc[reviews, "rank"]).statistic for a in pair]
            if np.isnan(rhos).any():  # constant scores: undefined in both
                assert math.isnan(correlations.rho[m, i])
                continue
            assert correlations.rho[m, i] == pytest.approx(np.mean(rhos), abs=1e-12)
            checked += 1
    assert checked > 150
