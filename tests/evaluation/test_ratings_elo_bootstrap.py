"""The compiled online-Elo bootstrap gives exactly the reference's numbers (same seed, same draws)."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stats import elo_bootstrap, elo_vector
from stats.portable_exp import portable_exp
from stats.ratings import (
    bootstrap_online_elo,
    bootstrap_online_elo_reference,
    compute_ratings,
    encode_battles,
    online_elo_bootstrap_indices,
)

WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]


def random_battles(rng: np.random.Generator, n: int, m: int) -> pd.DataFrame:
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    names = np.array([f"m{i}" for i in range(m)], dtype=object)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": rng.choice(WINNERS, n)})


def test_this_machine_runs_the_compiled_path():
    # Otherwise every equality below would compare the reference with itself. The portable exp
    # makes this hold on any CPU (numpy's own exp differs between CPUs).
    assert elo_bootstrap.exp_matches_numpy()
    assert elo_bootstrap.vector_kernel_ready()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 400),
    m=st.integers(2, 11),
    rounds=st.integers(1, 70),
    seed=st.integers(0, 2**32 - 1),
    threads=st.integers(1, 3),
    data_seed=st.integers(0, 10**6),
)
def test_compiled_bootstrap_equals_the_reference_bit_for_bit(n, m, rounds, seed, threads, data_seed):
    battles = encode_battles(random_battles(np.random.default_rng(data_seed), n, m))
    ours = bootstrap_online_elo(battles, rounds, seed, threads=threads)
    reference = bootstrap_online_elo_reference(battles, rounds, seed)
    np.testing.assert_array_equal(ours, reference)  # NaN where a model was not drawn, in both


@pytest.mark.parametrize("threads", [1, 2])
def test_rating_gaps_beyond_the_exp_table_take_the_exact_fallback(threads):
    # K = 40,000 Elo points per battle: rating gaps pass 88,000 points (|u_b - u_a| >= 512, where
    # the portable exp is inf or 0) within a few battles, in some rounds and steps but not others.
    battles = encode_battles(random_battles(np.random.default_rng(2), 300, 5))
    ours = bootstrap_online_elo(battles, 50, seed=8, k=40_000.0, threads=threads)
    reference = bootstrap_online_elo_reference(battles, 50, seed=8, k=40_000.0)
    np.testing.assert_array_equal(ours, reference)
    # Replaying the rounds shows both paths were taken.
    k_unit = 40_000.0 * np.log(10.0) / 400.0
    gaps = []
    for drawn_battles in online_elo_bootstrap_indices(300, 50, seed=8):
        u = np.zeros(5)
        for i in drawn_battles:
            a, b = battles.a[i], battles.b[i]
            gaps.append(u[b] - u[a])
            d = -k_unit / (portable_exp(np.array([gaps[-1]]))[0] + 1.0) + battles.score_a[i] * k_unit
            u[a] += d
            u[b] -= d
    outside = (np.abs(gaps) >= 512).sum()
    assert 10 < outside < len(gaps) - 10


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_many_draws_with_rejected_words_and_several_blocks(threads, monkeypatch):
    # 100,000 battles: 2^32 mod n = 67,296, so about one 32-bit word in 64,000 is rejected by
    # numpy's Lemire sampling; 40 rounds x 100,000 draws in blocks of 2^16 cross many blocks.
    monkeypatch.setattr(elo_bootstrap, "_BLOCK_DRAWS", 1 << 16)
    rng = np.random.default_rng(7)
    battles = encode_battles(random_battles(rng, 100_000, 9))
    ours = bootstrap_online_elo(battles, 40, seed=123, threads=threads)
    reference = bootstrap_online_elo_reference(battles, 40, seed=123)
    np.testing.assert_array_equal(ours, reference)
    # The stream really did skip words: without skipping, the draws would differ.
    words = np.random.PCG64(123).random_raw(2 * 40 * 100_000 // 2 + 64)
    low_high = np.stack([words & 0xFFFFFFFF, words >> 32], axis=1).ravel()
    assert ((low_high * np.uint64(100_000)) & np.uint64(0xFFFFFFFF) < (1 << 32) % 100_000).sum() > 20


@pytest.mark.parametrize("threads", [1, 2])
def test_tiny_blocks_where_kept_draws_cover_a_whole_block(threads, monkeypatch):
    # Blocks of 64 draws: with 1-3 rounds the last block can be smaller than the draws kept over
    # from the block before (nothing new is generated for it).
    monkeypatch.setattr(elo_bootstrap, "_BLOCK_DRAWS", 64)
    rng = np.random.default_rng(5)
    for n, rounds in [(65, 1), (66, 1), (130, 2), (131, 3), (200, 7)]:
        battles = encode_battles(random_battles(rng, n, 4))
        np.testing.assert_array_equal(bootstrap_online_elo(battles, rounds, seed=n, threads=threads),
                                      bootstrap_online_elo_reference(battles, rounds, seed=n))


def test_compute_ratings_reports_the_reference_median_and_interval():
    frame = random_battles(np.random.default_rng(11), 3000, 6)
    result = compute_ratings(frame, method="elo", bootstrap=200, seed=4)
    reference = bootstrap_online_elo_reference(encode_battles(frame), 200, 4)
    np.testing.assert_array_equal(result.samples, reference)
    low, median, high = np.nanquantile(reference, [0.025, 0.5, 0.975], axis=0)
    np.testing.assert_array_equal(result.rating, median)
    np.testing.assert_array_equal(result.ci_low, low)
    np.testing.assert_array_equal(result.ci_high, high)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-745.0, 709.0, allow_nan=False), min_size=1, max_size=300))
def test_the_compiled_exp_is_the_portable_exp_and_within_an_ulp_of_numpys(values):
    x = np.array(values)
    out = np.empty_like(x)
    elo_bootstrap._exp_array(x, out)
    assert np.array_equal(out.view(np.uint64), portable_exp(x).view(np.uint64))
    inside = np.abs(x) < 512
    np.testing.assert_array_max_ulp(out[inside], np.exp(x[inside]), maxulp=1)
    assert np.all(out[x >= 512] == np.inf) and np.all(out[x <= -512] == 0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-745.0, 709.0, allow_nan=False), min_size=1, max_size=300))
def test_the_vector_kernels_exp_is_the_portable_exp(values):
    x = np.array(values)
    assert np.array_equal(elo_vector.exp_array(x).view(np.uint64), portable_exp(x).view(np.uint64))


def test_the_vector_kernels_exp_at_the_edges():
    x = np.array([0.0, -0.0, 5e-324, 1e-300, 511.9, -511.9, 512.0, -512.0, 1e6, -1e6, np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(elo_vector.exp_array(x), portable_exp(x))


@pytest.mark.parametrize("m", [2, 5, 8, 9])
def test_both_kernels_match_the_reference_around_eight_models(m):
    # Up to 8 models the vector kernel rates bit-coded cells; from 9 the scalar-gather kernel.
    battles = encode_battles(random_battles(np.random.default_rng(m), 5000, m))
    for threads in (1, 2):
        np.testing.assert_array_equal(bootstrap_online_elo(battles, 37, seed=m, threads=threads),
                                      bootstrap_online_elo_reference(battles, 37, seed=m))


def test_small_boards_fall_back_to_the_general_kernel(monkeypatch):
    # Where the vector kernel cannot be built (or its exp differs), the general kernel rates
    # boards of up to 8 models too, with the same values.
    monkeypatch.setattr(elo_bootstrap, "vector_kernel_ready", lambda: False)
    battles = encode_battles(random_battles(np.random.default_rng(3), 3000, 6))
    np.testing.assert_array_equal(bootstrap_online_elo(battles, 33, seed=3, threads=2),
                                  bootstrap_online_elo_reference(battles, 33, seed=3))


def test_bit_coded_cells():
    m = 8
    codes = elo_vector.bit_cells(m)
    cell = np.arange(m * m * 3)
    assert np.array_equal(codes & 7, cell // (3 * m))
    assert np.array_equal((codes >> 3) & 7, (cell // 3) % m)
    assert np.array_equal(codes >> 6, cell % 3)
    with pytest.raises(ValueError):
        elo_vector.bit_cells(9)


def test_the_portable_exp_at_the_edges():
    x = np.array([0.0, -0.0, 5e-324, 1e-300, 511.9, -511.9, 512.0, -512.0, 1e6, -1e6, np.nan, np.inf, -np.inf])
    out = np.empty_like(x)
    elo_bootstrap._exp_array(x, out)
    np.testing.assert_array_equal(out, portable_exp(x))  # NaN where NaN, the same bits elsewhere
    assert np.isnan(out[-3])
    assert out[0] == 1.0 and out[1] == 1.0 and out[-2] == np.inf and out[-1] == 0.0
    np.testing.assert_array_max_ulp(out[:6], np.exp(x[:6]), maxulp=1)


def drawn(stream, counts, segments=None):
    """The logical draws of consecutive blocks of ``counts`` draws, generated part by part."""
    out = []
    for count in counts:
        block = stream.block(count)
        for part in range(stream.pairs):
            block.generate(part)
        block.finish()
        out.append(block.logical(0, count))
        if segments is not None:
            segments.append(block.length.shape[0])
    return np.concatenate(out)


@pytest.mark.parametrize("pairs", [1, 3])
def test_the_compiled_stream_draws_numpys_indices(pairs):
    # An identity cell table makes the cells the battle indices themselves. 2^32 mod n = 4,999,978
    # here: about one word in 860 is rejected, so every block skips some.
    n = 5_000_011
    counts = [1, 2, 77, 100_000, 3, 250_001, 64]
    stream = elo_bootstrap._DrawStream(99, n, np.arange(n, dtype=np.int32), pairs)
    expected = np.random.default_rng(99).integers(0, n, size=sum(counts))
    np.testing.assert_array_equal(drawn(stream, counts), expected)


def test_the_stream_tops_up_a_block_short_of_draws():
    # Planning with too high an acceptance rate leaves every block short; the top-up draws on
    # from where the block's stretches end.
    n = 5_000_011
    stream = elo_bootstrap._DrawStream(3, n, np.arange(n, dtype=np.int32), 2)
    stream.accept = 8.0
    counts = [10_000, 5, 30_000]
    expected = np.random.default_rng(3).integers(0, n, size=sum(counts))
    segments = []
    np.testing.assert_array_equal(drawn(stream, counts, segments), expected)
    assert segments[0] > 1 + 2 * 2 and segments[2] > 1 + 2 * 2  # kept draws, 4 stretches, top-ups
