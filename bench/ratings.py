"""Benchmark of the ratings and agreement cores against straightforward baselines.

Run from the repository root::

    python bench/ratings.py                 # 10k, 100k and 1M battles
    python bench/ratings.py --sizes 10000,50000

Synthetic battles: 8 models with planted Bradley–Terry strengths, 5 % ties, fixed seed.
Baselines are written the way FastChat's ``elo_analysis.py`` does it: a Python row loop with
``itertuples`` for online Elo, a refit on each resampled battle table for the bootstrap, and a
generic optimiser (scipy L-BFGS) on the per-battle likelihood for Bradley–Terry. Majority vote is
compared with a Counter-per-pair loop. The compiled online-Elo bootstrap is also compared with its
numpy reference (same seed and draws), which it must match bit for bit.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats.pairwise_agreement import majority_vote  # noqa: E402
from stats.ratings import (  # noqa: E402
    EncodedBattles,
    bootstrap_bradley_terry,
    bootstrap_online_elo,
    bootstrap_online_elo_reference,
    bradley_terry,
    encode_battles,
    online_elo,
    online_elo_bootstrap_indices,
)

MODELS = [f"vlm-{i}" for i in range(8)]
PLANTED_STRENGTHS = np.linspace(-0.5, 0.5, len(MODELS))  # base 10: ratings 800..1200
SEED = 20230712
WORKERS = 200
# Runs of the compiled online-Elo bootstrap (each printed with its CPU time; the table takes the best).
ELO_BOOTSTRAP_RUNS = 3


# ------------------------------------------------------------------------------------ data


def synthetic_battles(n: int, seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    m = len(MODELS)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p_a = 1.0 / (1.0 + 10.0 ** (PLANTED_STRENGTHS[b] - PLANTED_STRENGTHS[a]))
    draw = rng.random(n)
    winner = np.where(draw < p_a, "model_a", "model_b").astype(object)
    tie = rng.random(n)
    winner[tie < 0.025] = "tie"
    winner[(tie >= 0.025) & (tie < 0.05)] = "tie (bothbad)"
    names = np.array(MODELS, dtype=object)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def synthetic_votes(pairs: int, votes_per_pair: int = 5, seed: int = SEED) -> pd.DataFrame:
    """Workers of varying accuracy judging pairs whose better side is known; rows shuffled."""
    rng = np.random.default_rng(seed)
    n = pairs * votes_per_pair
    pair_id = np.repeat(np.arange(pairs), votes_per_pair)
    worker = rng.integers(0, WORKERS, n)
    accuracy = rng.uniform(0.55, 0.95, WORKERS)
    better = rng.integers(0, 2, pairs)
    correct = rng.random(n) < accuracy[worker]
    side = np.where(correct, better[pair_id], 1 - better[pair_id])
    choice = np.array(["left", "right"], dtype=object)[side]
    order = rng.permutation(n)
    return pd.DataFrame({"pair_id": pair_id[order], "worker_id": worker[order], "choice": choice[order]})


# ------------------------------------------------------------------------------- baselines


def baseline_compute_elo(battles: pd.DataFrame, K=4, SCALE=400, BASE=10, INIT_RATING=1000) -> dict:
    """FastChat's compute_elo: a row loop with itertuples."""
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
            raise ValueError(f"unexpected vote {winner}")
        rating[model_a] += K * (sa - ea)
        rating[model_b] += K * (1 - sa - eb)
    return dict(rating)


def baseline_bradley_terry(battles: pd.DataFrame) -> dict:
    """Per-battle likelihood minimised by scipy L-BFGS (no collapse), mean rating 1000."""
    names = sorted(set(battles["model_a"]) | set(battles["model_b"]))
    index = {name: i for i, name in enumerate(names)}
    a = battles["model_a"].map(index).to_numpy()
    b = battles["model_b"].map(index).to_numpy()
    score = battles["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}).to_numpy()
    ln10, m = math.log(10.0), len(names)

    def objective(r):
        x = ln10 * (r[a] - r[b])
        value = (score * np.logaddexp(0.0, -x) + (1 - score) * np.logaddexp(0.0, x)).sum()
        residual = ln10 * (1.0 / (1.0 + np.exp(-x)) - score)
        gradient = np.bincount(a, residual, minlength=m) - np.bincount(b, residual, minlength=m)
        return value, gradient

    fit = minimize(objective, np.zeros(m), jac=True, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-8, "maxiter": 1000})
    ratings = 400 * (fit.x - fit.x.mean()) + 1000
    return dict(zip(names, ratings))


def baseline_majority(votes: pd.DataFrame):
    """A Counter per pair, then a loop over votes for worker agreement."""
    counters: dict = defaultdict(Counter)
    pair_ids, workers, choices = votes["pair_id"].tolist(), votes["worker_id"].tolist(), votes["choice"].tolist()
    for pair_id, choice in zip(pair_ids, choices):
        counters[pair_id][choice] += 1
    outcome = {}
    for pair_id, counter in counters.items():
        ranked = counter.most_common()
        top = ranked[0][1]
        tie = len(ranked) > 1 and ranked[1][1] == top
        outcome[pair_id] = ("tie" if tie else ranked[0][0], top, sum(counter.values()))
    scored, agreed = Counter(), Counter()
    for pair_id, worker, choice in zip(pair_ids, workers, choices):
        winner = outcome[pair_id][0]
        if winner != "tie":
            scored[worker] += 1
            agreed[worker] += choice == winner
    agreement = {worker: agreed[worker] / scored[worker] for worker in scored}
    return outcome, agreement


# --------------------------------------------------------------------------------- timing


def timed(function, repeats: int = 5):
    """Best of ``repeats`` runs (one run when a run takes over a second); returns (seconds, result)."""
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
        if best > 1.0:
            break
    return best, result


def fresh(battles: EncodedBattles) -> EncodedBattles:
    """Same arrays without cached counts, so the collapse is part of what is timed."""
    return EncodedBattles(battles.models, battles.a, battles.b, battles.outcome)


def max_difference(ours: dict, baseline: dict) -> float:
    return max(abs(ours[name] - baseline[name]) for name in baseline)


def bench_size(n: int, rounds: int, baseline_rounds: int, rows: list, notes: list) -> None:
    frame = synthetic_battles(n)
    t_encode, battles = timed(lambda: encode_battles(frame))
    rows.append((n, "encode battles (model ids, outcomes)", None, t_encode, "-"))

    t_base, base_elo = timed(lambda: baseline_compute_elo(frame), repeats=1)
    t_ours, ours_elo = timed(lambda: online_elo(encode_battles(frame)))
    rows.append((n, "online Elo (encode + pass)", t_base, t_ours, max_difference(dict(zip(battles.models, ours_elo)), base_elo)))
    t_pass, _ = timed(lambda: online_elo(battles))
    rows.append((n, "online Elo (pass on encoded)", t_base, t_pass, "same"))

    t_base, base_bt = timed(lambda: baseline_bradley_terry(frame), repeats=1)
    t_ours, fit = timed(lambda: bradley_terry(fresh(battles)))
    rows.append((n, "BT MLE (collapse + fit)", t_base, t_ours, max_difference(dict(zip(battles.models, fit.ratings)), base_bt)))

    def baseline_bt_bootstrap():
        rng = np.random.default_rng(SEED)
        return [baseline_bradley_terry(frame.sample(frac=1.0, replace=True, random_state=rng)) for _ in range(baseline_rounds)]

    t_base, _ = timed(baseline_bt_bootstrap, repeats=1)

    def ours_bt_bootstrap():
        encoded = fresh(battles)
        point = bradley_terry(encoded)
        return point, bootstrap_bradley_terry(encoded, rounds, seed=SEED, start=point.strengths)

    t_ours, (point, samples) = timed(ours_bt_bootstrap)
    rows.append((
        n,
        f"BT MLE + {rounds} bootstrap",
        t_base * rounds / baseline_rounds,
        t_ours,
        max_difference(dict(zip(battles.models, point.ratings)), base_bt),
    ))

    # Baseline Elo bootstrap replays our first draws so the two can be compared exactly.
    indices = online_elo_bootstrap_indices(n, baseline_rounds, seed=SEED)

    def baseline_elo_bootstrap():
        return [baseline_compute_elo(frame.iloc[indices[r]]) for r in range(baseline_rounds)]

    t_base, base_rounds = timed(baseline_elo_bootstrap, repeats=1)
    ours_rounds = bootstrap_online_elo(battles, baseline_rounds, seed=SEED)
    difference = max(
        max_difference(dict(zip(battles.models, ours_rounds[r])), base_rounds[r]) for r in range(baseline_rounds)
    )
    # Three runs, each with its CPU seconds (all threads): on a shared machine the spread and the CPU
    # time say more than one wall time. The table takes the best run, as for every other operation.
    from stats.elo_bootstrap import default_threads

    runs = []
    for _ in range(ELO_BOOTSTRAP_RUNS):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        compiled = bootstrap_online_elo(battles, rounds, seed=SEED)
        runs.append((time.perf_counter() - wall_start, time.process_time() - cpu_start))
    t_ours = min(wall for wall, _ in runs)
    walls = ", ".join(f"{wall:.2f}" for wall, _ in runs)
    cpus = ", ".join(f"{cpu:.2f}" for _, cpu in runs)
    best_cpu = min(cpu for _, cpu in runs)
    notes.append(f"n={n:,}: compiled online-Elo bootstrap ({rounds} rounds), {len(runs)} runs: {walls} s wall "
                 f"(best {t_ours:.2f}), {cpus} s CPU on {default_threads()} threads "
                 f"(least {best_cpu / (n * rounds) * 1e9:.1f} ns of CPU per Elo update)")
    rows.append((n, f"online Elo + {rounds} bootstrap", t_base * rounds / baseline_rounds, t_ours, difference))
    # The same computation by the numpy reference (all rounds side by side, numpy calls per step),
    # which the compiled kernels must match exactly.
    t_reference, reference = timed(lambda: bootstrap_online_elo_reference(battles, rounds, seed=SEED), repeats=1)
    differing = int((~((compiled == reference) | (np.isnan(compiled) & np.isnan(reference)))).sum())
    rows.append((n, f"online Elo + {rounds} bootstrap: numpy reference -> compiled", t_reference, t_ours,
                 "identical" if differing == 0 else f"{differing} values differ"))

    votes = synthetic_votes(n)
    t_base, (base_outcome, base_agreement) = timed(lambda: baseline_majority(votes), repeats=1)
    t_ours, result = timed(lambda: majority_vote(votes))
    pairs = result.pairs
    ours_outcome = dict(zip(pairs.index.tolist(), zip(pairs["winner"].astype(str), pairs["majority"], pairs["votes"])))
    mismatched = sum(ours_outcome[p] != (w, t, v) for p, (w, t, v) in base_outcome.items())
    agreement_gap = max(abs(result.workers.at[w, "agreement"] - a) for w, a in base_agreement.items())
    rows.append((
        n,
        f"majority vote ({n:,} pairs x 5 votes)",
        t_base,
        t_ours,
        f"{mismatched} pairs differ; agreement {agreement_gap:.1e}",
    ))
    notes.append(f"n={n:,}: BT bootstrap 95% width of {MODELS[0]}: {np.subtract(*np.quantile(samples[:, 0], [0.975, 0.025])):.1f} points")


def format_seconds(value):
    return "-" if value is None else f"{value:.4f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated battle counts")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds for our code")
    parser.add_argument("--baseline-rounds", type=int, default=10, help="bootstrap rounds actually run by the baselines")
    args = parser.parse_args(argv)
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]

    rows: list = []
    notes: list = []
    # Loading (or, the first time, compiling) the Elo kernels and checking their exp against numpy's
    # happens once per process; it is timed here so that the rows below measure the work alone.
    started = time.perf_counter()
    from stats import elo_bootstrap

    exact = elo_bootstrap.exp_matches_numpy()
    bootstrap_online_elo(encode_battles(synthetic_battles(100)), 2, seed=SEED)
    notes.append(f"Elo bootstrap kernels loaded in {time.perf_counter() - started:.2f} s "
                 f"({'compiled path' if exact else 'exp differs from numpy here: numpy reference path'}, "
                 f"{elo_bootstrap.default_threads()} threads)")
    for n in sizes:
        bench_size(n, args.rounds, args.baseline_rounds, rows, notes)

    header = ("size", "operation", "baseline s", "ours s", "speed-up", "max |diff| vs baseline")
    table = []
    for n, operation, base, ours, difference in rows:
        speedup = "-" if base is None else f"{base / ours:,.0f}x"
        diff = difference if isinstance(difference, str) else f"{difference:.2e}"
        table.append((f"{n:,}", operation, format_seconds(base), format_seconds(ours), speedup, diff))
    widths = [max(len(str(line[i])) for line in [header, *table]) for i in range(len(header))]
    right = {0, 2, 3, 4}
    for line in [header, tuple("-" * w for w in widths), *table]:
        print("  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(line, widths))).rstrip())
    print()
    print(f"ours: best of 5 runs (one run when over 1 s; the online-Elo bootstrap: best of {ELO_BOOTSTRAP_RUNS}); "
          "baselines: one run.")
    print(
        f"Bootstrap baselines ran {args.baseline_rounds} rounds; their time is extrapolated linearly to "
        f"{args.rounds} rounds. The Elo bootstrap baseline replays our first {args.baseline_rounds} draws "
        "(diff = largest rating gap over those rounds); the BT bootstrap diff compares the full-data "
        "MLE that both report as the rating."
    )
    print("BT baseline: scipy L-BFGS on the per-battle likelihood; the diff is its optimiser tolerance "
          "plus our 1e-4 ridge term.")
    print("numpy reference -> compiled: the same bootstrap (seed, draws, float operations) before and after "
          "compilation; 'identical' means every rating of every round is bit-for-bit equal.")
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
