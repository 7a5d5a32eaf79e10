"""Majority vote over crowd judgments of pairs and per-worker agreement."""
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats.pairwise_agreement import majority_vote, majority_vote_arrays


def votes_for(pair_id, choices, first_worker=0):
    return [(pair_id, f"w{first_worker + i}", choice) for i, choice in enumerate(choices)]


def test_levels_ties_and_worker_agreement_hand_computed():
    rows = (
        votes_for("p1", ["A", "A", "A", "A", "A"])
        + votes_for("p2", ["A", "B", "B", "B", "B"])
        + votes_for("p3", ["B", "A", "B", "A", "B"])
        + votes_for("p4", ["A", "B", "A", "B"])  # even split: no majority
    )
    result = majority_vote(pd.DataFrame(rows, columns=["pair_id", "worker_id", "choice"]))
    pairs = result.pairs
    assert pairs["winner"].astype(str).tolist() == ["A", "B", "B", "tie"]
    assert pairs["majority"].tolist() == [5, 4, 3, 2]
    assert pairs["votes"].tolist() == [5, 5, 5, 4]
    assert pairs["level"].astype(str).tolist() == ["5/5", "4/5", "3/5", "2/4"]
    assert pairs["tie"].tolist() == [False, False, False, True]
    assert result.level_counts().to_dict() == {"5/5": 1, "4/5": 1, "3/5": 1, "2/4": 1}

    workers = result.workers
    # Majorities A, B, B on p1..p3; p4 is tied and not scored.
    # w0 voted A, A, B (+ p4): 2 of 3 agree. w2 voted A, B, B (+ p4): 3 of 3.
    assert workers.loc["w0"].tolist() == [4, 3, 2, pytest.approx(2 / 3)]
    assert workers.loc["w2"].tolist() == [4, 3, 3, 1.0]
    # w4 judged only p1..p3 (A, B, B).
    assert workers.loc["w4"].tolist() == [3, 3, 3, 1.0]


def test_paper_agreement_levels():
    # VisIT-Bench: of 690 model-vs-model pairs, 336 are 5/5, 200 are 4/5 and 154 are 3/5.
    rng = np.random.default_rng(0)
    splits = [5] * 336 + [4] * 200 + [3] * 154
    pair_ids, choices = [], []
    for pair_id, majority in enumerate(splits):
        side = rng.choice(["left", "right"])
        other = "right" if side == "left" else "left"
        ballot = [side] * majority + [other] * (5 - majority)
        rng.shuffle(ballot)
        pair_ids += [pair_id] * 5
        choices += ballot
    counts = majority_vote_arrays(np.array(pair_ids), np.array(choices)).level_counts()
    assert counts.to_dict() == {"5/5": 336, "4/5": 200, "3/5": 154}


def test_three_way_split_and_sparse_ids():
    pair_ids = np.array([10, 10, 10, 10, 10, 99_999_999, 99_999_999, 99_999_999])
    choices = np.array(["A", "A", "B", "B", "C", "C", "C", "B"])
    result = majority_vote_arrays(pair_ids, choices, tie_label="no majority")
    assert result.pairs.index.tolist() == [10, 99_999_999]
    assert result.pairs["winner"].astype(str).tolist() == ["no majority", "C"]
    assert result.pairs["level"].astype(str).tolist() == ["2/5", "2/3"]
    assert result.workers is None


def test_missing_values_and_columns_are_rejected():
    with pytest.raises(ValueError, match="row 2: missing choice"):
        majority_vote_arrays(np.array([1, 1]), np.array(["A", None], dtype=object))
    with pytest.raises(ValueError, match="missing column 'choice'"):
        majority_vote(pd.DataFrame({"pair_id": [1], "worker_id": [1]}))


def reference_majority(pair_ids, choices):
    """Counter per pair: the straightforward definition."""
    grouped = {}
    for pair_id, choice in zip(pair_ids, choices):
        grouped.setdefault(pair_id, Counter())[choice] += 1
    out = {}
    for pair_id, counter in grouped.items():
        top = max(counter.values())
        leaders = [c for c, n in counter.items() if n == top]
        out[pair_id] = (leaders[0] if len(leaders) == 1 else "tie", top, sum(counter.values()))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 9), st.sampled_from(["left", "right", "both bad"])),
        min_size=1,
        max_size=120,
    )
)
def test_level_counts_sum_to_pairs_and_match_the_definition(votes):
    pair_ids = np.array([v[0] for v in votes])
    workers = np.array([v[1] for v in votes])
    choices = np.array([v[2] for v in votes], dtype=object)
    result = majority_vote_arrays(pair_ids, choices, workers)
    expected = reference_majority(pair_ids.tolist(), choices.tolist())
    assert result.level_counts().sum() == len(expected) == len(result.pairs)
    for pair_id, (winner, top, total) in expected.items():
        row = result.pairs.loc[pair_id]
        assert (str(row["winner"]), row["majority"], row["votes"]) == (winner, top, total)
        assert row["tie"] == (winner == "tie")
    # Every vote is counted once per worker; scored votes are those on decided pairs.
    assert result.workers["votes"].sum() == len(votes)
    decided = {p for p, (w, _, _) in expected.items() if w != "tie"}
    assert result.workers["scored_votes"].sum() == sum(p in decided for p in pair_ids.tolist())
    agreeing = sum(p in decided and c == expected[p][0] for p, c in zip(pair_ids.tolist(), choices.tolist()))
    assert result.workers["agreements"].sum() == agreeing
