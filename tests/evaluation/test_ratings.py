"""Ratings core: hand-computed values, FastChat equivalence, degenerate data and properties."""
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats.ratings import (
    InvalidBattlesError,
    bootstrap_bradley_terry,
    bootstrap_online_elo,
    bradley_terry,
    category_win_rates,
    compute_ratings,
    empirical_win_fractions,
    encode_battles,
    interval_ranks,
    online_elo,
    online_elo_bootstrap_indices,
    predicted_win_rates,
    rating_order_ranks,
    summarize_bootstrap,
    win_rate_vs_reference,
)

WINNER_LABELS = ["model_a", "model_b", "tie", "tie (bothbad)"]
FLIPPED_WINNER = {"model_a": "model_b", "model_b": "model_a", "tie": "tie", "tie (bothbad)": "tie (bothbad)"}


def battles_frame(rows, category=None):
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    if category is not None:
        frame["category"] = category
    return frame


def fastchat_compute_elo(battles, K=4, SCALE=400, BASE=10, INIT_RATING=1000):
    """FastChat's compute_elo as written in elo_analysis.py: a row loop over the table."""
    rating = defaultdict(lambda: INIT_RATING)
    for _, model_a, model_b, winner in battles[["model_a", "model_b", "winner"]].itertuples():
        ra = rating[model_a]
        rb = rating[model_b]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        if winner == "model_a":
            sa = 1
        elif winner == "model_b":
            sa = 0
        elif winner == "tie" or winner == "tie (bothbad)":
            sa = 0.5
        else:
            raise ValueError(winner)
        rating[model_a] += K * (sa - ea)
        rating[model_b] += K * (1 - sa - eb)
    return dict(rating)


def simulate_battles(strengths, n, seed, tie_share=0.0):
    """Battles drawn from a Bradley–Terry model with base-10 strengths (rating = 400 r + 1000)."""
    rng = np.random.default_rng(seed)
    m = len(strengths)
    names = np.array([f"model-{i}" for i in range(m)], dtype=object)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    strengths = np.asarray(strengths)
    p_a = 1 / (1 + 10 ** (strengths[b] - strengths[a]))
    winner = np.where(rng.random(n) < p_a, "model_a", "model_b").astype(object)
    winner[rng.random(n) < tie_share] = "tie"
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def as_dict(models, values):
    return {model: float(value) for model, value in zip(models, values)}


# ------------------------------------------------------------------------------------- encoding


def test_encoding_sorts_models_and_scores_both_tie_labels_half():
    battles = encode_battles(
        battles_frame([("b", "a", "model_a"), ("a", "c", "tie"), ("c", "b", "tie (bothbad)"), ("a", "b", "model_b")])
    )
    assert battles.models == ["a", "b", "c"]
    assert battles.a.tolist() == [1, 0, 2, 0]
    assert battles.b.tolist() == [0, 2, 1, 1]
    assert battles.score_a.tolist() == [1.0, 0.5, 0.5, 0.0]
    # b beat a twice; the a-c and c-b ties give half a win to each side.
    np.testing.assert_array_equal(battles.win_matrix, [[0, 0, 0.5], [2, 0, 0.5], [0.5, 0.5, 0]])
    assert battles.battles_per_model.tolist() == [3, 3, 2]


@pytest.mark.parametrize(
    ("rows", "position", "field", "reason"),
    [
        ([("a", "b", "model_a"), ("a", "b", "draw")], 1, "winner", "unknown winner 'draw'"),
        ([("a", "b", "model_a"), ("a", "b", "model_a"), ("c", "c", "tie")], 2, "model_b", "equals model_a"),
        ([("a", "b", "model_a"), (None, "b", "tie")], 1, "model_a", "missing value"),
        ([("a", "b", "model_a"), ("a", "", "tie")], 1, "model_b", "empty value"),
        ([("a", "b", None)], 0, "winner", "missing value"),
    ],
)
def test_invalid_rows_name_the_row_and_field(rows, position, field, reason):
    with pytest.raises(InvalidBattlesError) as raised:
        encode_battles(battles_frame(rows))
    assert raised.value.position == position
    assert raised.value.field == field
    assert reason in raised.value.reason
    assert f"data row {position + 1}" in str(raised.value)


def test_missing_column_and_empty_table_are_rejected():
    with pytest.raises(InvalidBattlesError, match="missing column 'winner'"):
        encode_battles(pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}))
    with pytest.raises(InvalidBattlesError, match="no battles"):
        encode_battles(battles_frame([]))


# ------------------------------------------------------------------------------------ online Elo


def test_online_elo_hand_computed_two_battles():
    # 1) a beats b from 1000/1000: E = 0.5, a = 1002, b = 998.
    # 2) b vs a tie: E_b = 1 / (1 + 10^(4/400)) = 0.494244..., b += 4 (0.5 - E_b) = 0.0230248...
    ratings = online_elo(encode_battles(battles_frame([("a", "b", "model_a"), ("b", "a", "tie")])))
    assert ratings[0] == pytest.approx(1001.9769751663554, abs=1e-9)
    assert ratings[1] == pytest.approx(998.0230248336446, abs=1e-9)


def test_online_elo_equals_fastchat_row_loop():
    rng = np.random.default_rng(7)
    frame = simulate_battles([0.4, 0.1, 0.0, -0.2, -0.5], 20_000, seed=3, tie_share=0.1)
    frame.loc[rng.random(len(frame)) < 0.05, "winner"] = "tie (bothbad)"
    battles = encode_battles(frame)
    ours = as_dict(battles.models, online_elo(battles))
    reference = fastchat_compute_elo(frame)
    assert ours.keys() == reference.keys()
    for model, rating in reference.items():
        assert ours[model] == pytest.approx(rating, abs=1e-9)
    # The pass follows the input order: reversing the rows changes the result.
    reversed_ratings = online_elo(encode_battles(frame.iloc[::-1]))
    assert np.abs(reversed_ratings - online_elo(battles)).max() > 0.1


# -------------------------------------------------------------------------------- Bradley–Terry


def test_bradley_terry_two_models_hand_computed():
    # a wins 3 of 4: 10^(r_a - r_b) = 3, mean 0, so ratings are 1000 +- 200 log10(3).
    battles = encode_battles(battles_frame([("a", "b", "model_a")] * 2 + [("b", "a", "model_b"), ("b", "a", "model_a")]))
    fit = bradley_terry(battles, penalty=0.0)
    assert fit.ratings[0] == pytest.approx(1095.4242509439325, abs=1e-9)
    assert fit.ratings[1] == pytest.approx(904.5757490560675, abs=1e-9)
    assert fit.ratings.mean() == pytest.approx(1000.0, abs=1e-9)
    assert fit.degenerate_models == [] and fit.warnings == []
    # The default ridge term pulls four battles' worth of evidence by about a thousandth of a point.
    penalised = bradley_terry(battles)
    assert 0 < 1095.4242509439325 - penalised.ratings[0] < 0.01


def test_bradley_terry_three_models_with_ties_hand_computed():
    # Observed wins equal expected wins when consecutive models differ by log10(2) (odds 2:1)
    # and a beats c with odds 4:1; the tie pair scores a 2 of 3 against b, like 2 wins 1 loss.
    rows = (
        [("a", "b", "model_a"), ("a", "b", "tie"), ("b", "a", "tie (bothbad)")]
        + [("b", "c", "model_a")] * 2
        + [("c", "b", "model_a")]
        + [("a", "c", "model_a")] * 4
        + [("c", "a", "model_a")]
    )
    fit = bradley_terry(encode_battles(battles_frame(rows)), penalty=0.0)
    gap = 120.41199826559247  # 400 log10(2)
    np.testing.assert_allclose(fit.ratings, [1000 + gap, 1000, 1000 - gap], rtol=0, atol=1e-9)


def test_anchor_shifts_every_rating_by_one_constant():
    battles = encode_battles(simulate_battles([0.3, 0.0, -0.3], 3000, seed=1))
    free = bradley_terry(battles)
    anchored = bradley_terry(battles, anchor=("model-1", 1200.0))
    assert anchored.ratings[1] == pytest.approx(1200.0)
    np.testing.assert_allclose(anchored.ratings - free.ratings, 1200.0 - free.ratings[1])


def test_models_that_never_win_or_never_lose_get_finite_reported_ratings():
    rows = (
        [("top", "mid", "model_a")] * 6
        + [("low", "top", "model_b")] * 4
        + [("mid", "low", "model_a")] * 5
        + [("low", "mid", "tie")]
        + [("mid", "other", "model_a"), ("other", "mid", "model_a")]
    )
    battles = encode_battles(battles_frame(rows))
    fit = bradley_terry(battles)
    assert np.isfinite(fit.ratings).all()
    assert fit.degenerate_models == ["top"]  # "low" tied once: half a win keeps its MLE finite
    assert any("never lost a battle: top" in message for message in fit.warnings)
    ranking = [battles.models[i] for i in np.argsort(-fit.ratings)]
    assert ranking[0] == "top" and ranking[-1] == "low"

    never_wins = encode_battles(battles_frame([("a", "b", "model_a")] * 3 + [("c", "b", "model_a"), ("a", "c", "tie")]))
    fit = bradley_terry(never_wins)
    assert np.isfinite(fit.ratings).all()
    assert fit.degenerate_models == ["b"]
    assert any("never won a battle: b" in message for message in fit.warnings)

    result = compute_ratings(battles_frame(rows), method="bt", bootstrap=200, seed=1)
    assert np.isfinite(result.rating).all() and np.isfinite(result.ci_low).all() and np.isfinite(result.ci_high).all()
    assert result.degenerate_models == ["top"]
    assert result.to_dict()["degenerate_models"] == ["top"]


def test_disconnected_groups_are_reported():
    rows = [("a", "b", "model_a"), ("b", "a", "model_a"), ("c", "d", "model_a"), ("d", "c", "tie")]
    fit = bradley_terry(encode_battles(battles_frame(rows)))
    assert np.isfinite(fit.ratings).all()
    assert any("2 groups that never met" in message for message in fit.warnings)


# ---------------------------------------------------------------------------------- bootstrap


def test_elo_bootstrap_rounds_replay_online_elo_on_the_drawn_battles():
    frame = simulate_battles([0.2, 0.0, -0.1, -0.3], 300, seed=5, tie_share=0.1)
    battles = encode_battles(frame)
    samples = bootstrap_online_elo(battles, rounds=40, seed=11)
    indices = online_elo_bootstrap_indices(battles.n_battles, rounds=40, seed=11)
    assert samples.shape == (40, 4) and indices.shape == (40, 300)
    for round_index in range(40):
        expected = online_elo(battles.take(indices[round_index]))
        np.testing.assert_allclose(samples[round_index], expected, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(samples, bootstrap_online_elo(battles, rounds=40, seed=11))
    assert not np.array_equal(samples, bootstrap_online_elo(battles, rounds=40, seed=12))


def test_elo_bootstrap_marks_models_missing_from_a_resample():
    rows = [("a", "b", "model_a"), ("b", "a", "model_a")] * 20 + [("a", "rare", "model_b")]
    battles = encode_battles(battles_frame(rows))
    samples = bootstrap_online_elo(battles, rounds=200, seed=0)
    indices = online_elo_bootstrap_indices(battles.n_battles, rounds=200, seed=0)
    absent = ~(indices == battles.n_battles - 1).any(axis=1)
    assert 0 < absent.sum() < 200  # P(absent) = (40/41)^41 ~ 0.36
    assert np.isnan(samples[absent, battles.models.index("rare")]).all()
    assert not np.isnan(samples[~absent]).any()
    summary = summarize_bootstrap(samples)
    assert np.isfinite(summary.median).all()


def test_bt_bootstrap_interval_narrows_by_sqrt_of_the_data_size():
    frame = simulate_battles([0.3, 0.1, -0.1, -0.3], 2000, seed=2, tie_share=0.1)
    small = encode_battles(frame)
    large = encode_battles(pd.concat([frame] * 4, ignore_index=True))
    width_small = np.diff(np.quantile(bootstrap_bradley_terry(small, 1000, seed=3), [0.025, 0.975], axis=0), axis=0)
    width_large = np.diff(np.quantile(bootstrap_bradley_terry(large, 1000, seed=3), [0.025, 0.975], axis=0), axis=0)
    # Resampling n battles: four times the battles give half the width.
    np.testing.assert_allclose(width_large / width_small, 0.5, atol=0.1)
    # Every round is a mean-1000 fit and the rounds scatter around the full-data MLE.
    samples = bootstrap_bradley_terry(small, 1000, seed=3)
    np.testing.assert_allclose(samples.mean(axis=1), 1000.0)
    np.testing.assert_allclose(samples.mean(axis=0), bradley_terry(small).ratings, atol=3.0)


def test_bt_bootstrap_interval_matches_the_fisher_information():
    frame = simulate_battles([0.3, 0.1, -0.1, -0.3], 4000, seed=6)
    battles = encode_battles(frame)
    fit = bradley_terry(battles)
    # Asymptotic covariance of the strengths: the pseudo-inverse of the observed information.
    games = battles.win_matrix + battles.win_matrix.T
    p = 1 / (1 + 10 ** (fit.strengths[None, :] - fit.strengths[:, None]))
    information = -(np.log(10) ** 2) * games * p * (1 - p)
    np.fill_diagonal(information, -information.sum(axis=1))
    standard_error = 400 * np.sqrt(np.diag(np.linalg.pinv(information)))
    samples = bootstrap_bradley_terry(battles, 2000, seed=1)
    low, high = np.quantile(samples, [0.025, 0.975], axis=0)
    np.testing.assert_allclose((high - low) / (2 * 1.96 * standard_error), 1.0, atol=0.12)


def test_interval_ranks_hand_computed():
    low = np.array([10.0, 5.0, 0.0, 11.0])
    high = np.array([20.0, 12.0, 4.0, 13.0])
    # model 2's upper bound 4 is exceeded by the lower bounds 10, 5 and 11.
    assert interval_ranks(low, high).tolist() == [1, 1, 4, 1]
    assert rating_order_ranks(np.array([1000.0, 1100.0, 1000.0, 900.0])).tolist() == [2, 1, 2, 4]


# --------------------------------------------------------------------------------- win rates


def test_paper_predicted_win_rates():
    probabilities = predicted_win_rates(np.array([1223.0, 1085.0, 786.0]))
    assert round(probabilities[0, 1], 2) == 0.69
    assert round(probabilities[0, 2], 2) == 0.93
    assert probabilities[1, 0] == pytest.approx(1 - probabilities[0, 1])
    assert np.isnan(np.diag(probabilities)).all()


def test_empirical_fractions_reference_and_category_win_rates_hand_computed():
    rows = [
        ("x", "ref", "model_a"),
        ("ref", "x", "model_b"),
        ("x", "ref", "tie"),
        ("ref", "x", "model_a"),
        ("y", "ref", "model_b"),
        ("x", "y", "model_a"),
    ]
    frame = battles_frame(rows, category=["recipe", "recipe", "humor", "humor", "humor", "recipe"])
    battles = encode_battles(frame)
    fractions = empirical_win_fractions(battles)
    ref, x, y = (battles.models.index(name) for name in ("ref", "x", "y"))
    assert fractions[x, ref] == pytest.approx(2.5 / 4)
    assert fractions[ref, x] == pytest.approx(1.5 / 4)
    assert fractions[x, y] == 1.0 and fractions[y, x] == 0.0
    assert np.isnan(fractions[x, x])

    vs_ref = win_rate_vs_reference(battles, "ref")
    assert vs_ref.index.tolist() == ["x", "y"]
    assert vs_ref.loc["x"].tolist() == [4, 2, 1, 1, 0.625]
    assert vs_ref.loc["y"].tolist() == [1, 0, 0, 1, 0.0]

    per_category = category_win_rates(battles, reference="ref")
    assert per_category.loc["x", "recipe"] == 1.0  # two wins against ref
    assert per_category.loc["x", "humor"] == pytest.approx(0.25)  # a tie and a loss
    assert per_category.loc["y", "humor"] == 0.0
    assert np.isnan(per_category.loc["y", "recipe"])
    overall = category_win_rates(battles)
    assert overall.loc["y", "recipe"] == 0.0 and overall.loc["ref", "recipe"] == 0.0
    assert overall.loc["ref", "humor"] == pytest.approx(2.5 / 3)


# ----------------------------------------------------------------------------- DataFrame API


def test_compute_ratings_frame_and_dict():
    frame = simulate_battles([0.25, 0.0, -0.25], 1500, seed=4, tie_share=0.05)
    plain = compute_ratings(frame, method="bt", reference="model-1")
    assert plain.ci_low is None and plain.to_dict()["models"][0]["ci_low"] is None
    assert plain.to_frame().index.tolist() == ["model-0", "model-1", "model-2"]
    assert plain.to_frame()["rank"].tolist() == [1, 2, 3]
    assert plain.rating.mean() == pytest.approx(1000.0)

    booted = compute_ratings(frame, method="bt", bootstrap=300, seed=9, reference="model-1")
    np.testing.assert_allclose(booted.rating, plain.rating)  # BT keeps the full-data MLE
    assert (booted.ci_low < booted.rating).all() and (booted.rating < booted.ci_high).all()

    elo_booted = compute_ratings(frame, method="elo", bootstrap=50, seed=9)
    np.testing.assert_allclose(elo_booted.rating, np.median(elo_booted.samples, axis=0))

    document = booted.to_dict()
    assert document["method"] == "bt"
    assert [row["model"] for row in document["models"]] == ["model-0", "model-1", "model-2"]
    top = document["models"][0]
    assert set(top) == {
        "model", "rating", "ci_low", "ci_high", "rank", "battles",
        "win_rate_vs_reference", "battles_vs_reference", "ties_vs_reference",
    }
    assert top["battles"] == int(((frame.model_a == "model-0") | (frame.model_b == "model-0")).sum())
    assert document["models"][1]["win_rate_vs_reference"] is None
    matrix = document["win_rate_matrix"]
    assert matrix["model-0"]["model-0"] is None
    assert matrix["model-0"]["model-2"] == pytest.approx(1 / (1 + 10 ** ((booted.rating[2] - booted.rating[0]) / 400)))

    anchored = compute_ratings(frame, method="bt", bootstrap=300, seed=9, anchor=("model-2", 800))
    shift = 800 - booted.rating[2]
    np.testing.assert_allclose(anchored.rating, booted.rating + shift)
    np.testing.assert_allclose(anchored.ci_high, booted.ci_high + shift)
    np.testing.assert_array_equal(anchored.rank, booted.rank)


def test_compute_ratings_rejects_unknown_names():
    frame = battles_frame([("a", "b", "model_a"), ("b", "a", "tie")])
    with pytest.raises(ValueError, match="unknown model 'zz'"):
        compute_ratings(frame, reference="zz")
    with pytest.raises(ValueError, match="method"):
        compute_ratings(frame, method="glicko")


# ---------------------------------------------------------------------------------- properties

battle_rows = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 3), st.sampled_from(WINNER_LABELS)), min_size=1, max_size=60
)


def rows_from_draw(draw_rows, names):
    return [(names[a], names[(a + step) % 4], winner) for a, step, winner in draw_rows]


@settings(max_examples=40, deadline=None)
@given(battle_rows)
def test_swapping_sides_with_flipped_winner_changes_nothing(draw_rows):
    names = ["p", "q", "r", "s"]
    rows = rows_from_draw(draw_rows, names)
    swapped = [(b, a, FLIPPED_WINNER[w]) for a, b, w in rows]
    for method in ("elo", "bt"):
        original = compute_ratings(battles_frame(rows), method=method)
        mirrored = compute_ratings(battles_frame(swapped), method=method)
        assert original.models == mirrored.models
        np.testing.assert_allclose(original.rating, mirrored.rating, rtol=0, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(battle_rows, st.permutations(["zeta", "alpha", "mu", "beta"]))
def test_renaming_models_only_renames_ratings(draw_rows, new_names):
    old_names = ["p", "q", "r", "s"]
    rename = dict(zip(old_names, new_names))
    rows = rows_from_draw(draw_rows, old_names)
    renamed = [(rename[a], rename[b], w) for a, b, w in rows]
    for method in ("elo", "bt"):
        original = compute_ratings(battles_frame(rows), method=method)
        moved = compute_ratings(battles_frame(renamed), method=method)
        expected = {rename[m]: r for m, r in as_dict(original.models, original.rating).items()}
        got = as_dict(moved.models, moved.rating)
        assert got.keys() == expected.keys()
        for model in got:
            assert got[model] == pytest.approx(expected[model], abs=1e-7)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.floats(-0.8, 0.8), min_size=3, max_size=6),
    st.integers(0, 2**31),
)
def test_bt_recovers_planted_strengths(strengths, seed):
    frame = simulate_battles(strengths, 60_000, seed=seed)
    fit = bradley_terry(encode_battles(frame))
    planted = 400 * (np.array(strengths) - np.mean(strengths)) + 1000
    order = [int(name.split("-")[1]) for name in fit.models]
    # ~60k battles over at most 15 pairs: a standard error of a few rating points.
    np.testing.assert_allclose(fit.ratings, planted[order], atol=20)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(5, 40), min_size=6, max_size=6), st.integers(0, 2**31))
def test_bootstrap_interval_contains_the_point_estimate(counts, seed):
    # Three models, every ordered pair with some wins, so every MLE is finite.
    pairs = [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"), ("c", "b")]
    rows = [(winner, loser, "model_a") for (winner, loser), count in zip(pairs, counts) for _ in range(count)]
    frame = battles_frame(rows)
    bt = compute_ratings(frame, method="bt", bootstrap=500, seed=seed)
    assert (bt.ci_low <= bt.rating).all() and (bt.rating <= bt.ci_high).all()
    elo = compute_ratings(frame, method="elo", bootstrap=30, seed=seed)
    assert (elo.ci_low <= elo.rating).all() and (elo.rating <= elo.ci_high).all()
