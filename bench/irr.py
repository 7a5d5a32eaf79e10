"""Benchmark: vectorised IRR agreement, filtering and model correlation vs a per-pair scipy loop.

Synthetic data: 20,000 items x 5 annotators (drawn from a pool of 40) x 5 reviews, plus 2 models'
scores (one rounded so that it has ties), with text ids, rows in item order as an export lists
them. The vectorised core runs on all items, from the long tables to the per-model summary; the
reference loop calls ``scipy.stats.spearmanr`` once per annotator pair and per (model, top
annotator) and is timed on the first 2,000 items, then extrapolated linearly to 20,000 (its cost is
per item). The vectorised time is the best of several runs (wall clock); the same run on shuffled
rows is printed for information (hashing text ids in random memory order costs more).

Run from the repository root: ``python bench/irr.py``.
"""
from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats import irr  # noqa: E402

N_ITEMS = 20_000
N_ANNOTATORS = 5
N_REVIEWS = 5
ANNOTATOR_POOL = 40
LOOP_ITEMS = 2_000
THRESHOLD = 0.6
SEED = 20240611
TARGET_SECONDS = 0.2
TARGET_SPEEDUP = 300


def synthetic_data(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rankings that follow a noisy latent quality (so agreement varies), and two models' scores."""
    item_ids = np.array([f"img{i:05d}" for i in range(N_ITEMS)], dtype=object)
    latent = np.arange(N_REVIEWS)[None, :] + rng.normal(0, 1.0, (N_ITEMS, N_REVIEWS))
    noise = rng.normal(0, 2.5, (N_ITEMS, N_ANNOTATORS, N_REVIEWS))
    ranks = (latent[:, None, :] + noise).argsort(axis=-1).argsort(axis=-1) + 1
    pool = np.array([f"w{j:02d}" for j in range(ANNOTATOR_POOL)], dtype=object)
    annotators = np.argsort(rng.random((N_ITEMS, ANNOTATOR_POOL)), axis=1)[:, :N_ANNOTATORS]
    review_ids = (np.repeat(item_ids, N_REVIEWS).astype(str).astype(object)
                  + np.tile(np.array([f"-r{r}" for r in range(1, N_REVIEWS + 1)], dtype=object), N_ITEMS))
    rankings = pd.DataFrame({
        "item_id": np.repeat(item_ids, N_ANNOTATORS * N_REVIEWS),
        "annotator_id": pool[np.repeat(annotators.ravel(), N_REVIEWS)],
        "review_id": np.tile(review_ids.reshape(N_ITEMS, 1, N_REVIEWS), (1, N_ANNOTATORS, 1)).ravel(),
        "rank": ranks.ravel(),
    })
    perplexity = np.exp(2 + 0.3 * latent + rng.normal(0, 0.5, latent.shape))
    coarse = np.round(latent + rng.normal(0, 2.0, latent.shape))  # integer scores: many ties
    model_scores = pd.DataFrame({
        "item_id": np.tile(np.repeat(item_ids, N_REVIEWS), 2),
        "model": np.repeat(np.array(["perplexity-lm", "coarse-judge"], dtype=object), N_ITEMS * N_REVIEWS),
        "review_id": np.tile(review_ids, 2),
        "score": np.concatenate([perplexity.ravel(), coarse.ravel()]),
    })
    return rankings, model_scores


def best_time(function, *args, runs: int = 7) -> tuple[float, float, object]:
    """Best wall-clock and CPU time over ``runs`` calls, after one warm-up call."""
    function(*args)
    wall, cpu = [], []
    for _ in range(runs):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        out = function(*args)
        wall.append(time.perf_counter() - wall_start)
        cpu.append(time.process_time() - cpu_start)
    return min(wall), min(cpu), out


def vectorised(rankings: pd.DataFrame, model_scores: pd.DataFrame):
    result = irr.agreement(rankings, threshold=THRESHOLD)
    correlations = irr.model_correlations(result, model_scores)
    summary = irr.model_summary(correlations)
    return result, correlations, summary


def loop(rankings: pd.DataFrame, model_scores: pd.DataFrame, items: set) -> dict:
    """The plain version: per item, spearmanr for each annotator pair and each model x top annotator.

    Rows are sorted once by (item, annotator, review) so each item's rankings are an (n, k) block;
    every correlation is one ``spearmanr`` call.
    """
    human = rankings[rankings["item_id"].isin(items)]
    human = human.iloc[np.lexsort((human["review_id"].to_numpy(), human["annotator_id"].to_numpy(),
                                   human["item_id"].to_numpy()))]
    models = model_scores[model_scores["item_id"].isin(items)]
    models = models.iloc[np.lexsort((models["review_id"].to_numpy(), models["model"].to_numpy(),
                                     models["item_id"].to_numpy()))]
    human_items, human_annotators = human["item_id"].to_numpy(), human["annotator_id"].to_numpy()
    human_ranks = human["rank"].to_numpy()
    model_items, model_names = models["item_id"].to_numpy(), models["model"].to_numpy()
    model_values = models["score"].to_numpy()
    human_starts = np.flatnonzero(np.r_[True, human_items[1:] != human_items[:-1], True])
    model_starts = {item: i for i, item in reversed(list(enumerate(model_items)))}
    out = {}
    for begin, stop in zip(human_starts[:-1], human_starts[1:]):
        item = human_items[begin]
        annotators = human_annotators[begin:stop:N_REVIEWS]
        ranks = human_ranks[begin:stop].reshape(len(annotators), N_REVIEWS)
        best = None
        for a, b in itertools.combinations(range(len(annotators)), 2):
            rho = spearmanr(ranks[a], ranks[b]).statistic
            if best is None or rho > best[0] + irr.RHO_TOLERANCE:
                best = (rho, a, b)
        rho, a, b = best
        model_rho = {}
        first = model_starts[item]
        for m in range(first, first + 2 * N_REVIEWS, N_REVIEWS):
            scores = model_values[m:m + N_REVIEWS]
            model_rho[model_names[m]] = (spearmanr(scores, ranks[a]).statistic
                                         + spearmanr(scores, ranks[b]).statistic) / 2
        out[item] = (rho, annotators[a], annotators[b], rho >= THRESHOLD, model_rho)
    return out


def main() -> None:
    rng = np.random.default_rng(SEED)
    rankings, model_scores = synthetic_data(rng)
    print(f"data: {N_ITEMS} items x {N_ANNOTATORS} annotators x {N_REVIEWS} reviews "
          f"({len(rankings)} ranking rows), 2 models ({len(model_scores)} score rows)")

    vector_seconds, vector_cpu, (result, correlations, summary) = best_time(vectorised, rankings, model_scores)
    shuffled = rankings.iloc[rng.permutation(len(rankings))].reset_index(drop=True)
    shuffled_seconds, _, (shuffled_result, _, _) = best_time(vectorised, shuffled, model_scores, runs=3)
    order = pd.Index(shuffled_result.table.item_ids).get_indexer(result.table.item_ids)
    assert np.array_equal(shuffled_result.best_rho[order], result.best_rho, equal_nan=True)

    subset = set(result.table.item_ids[:LOOP_ITEMS])
    start = time.perf_counter()
    reference = loop(rankings, model_scores, subset)
    loop_seconds = time.perf_counter() - start
    loop_extrapolated = loop_seconds * N_ITEMS / LOOP_ITEMS

    position = {item: i for i, item in enumerate(result.table.item_ids)}
    rho_diff, model_diff, pair_mismatch, keep_mismatch = 0.0, 0.0, 0, 0
    model_index = {m: i for i, m in enumerate(correlations.models)}
    for item, (rho, a, b, kept, model_rho) in reference.items():
        i = position[item]
        rho_diff = max(rho_diff, abs(result.best_rho[i] - rho))
        pair = tuple(result.table.annotator_ids[result.best_annotators[i]])
        pair_mismatch += pair != (a, b)
        keep_mismatch += bool(result.kept[i]) != bool(kept)
        for model, value in model_rho.items():
            model_diff = max(model_diff, abs(correlations.rho[model_index[model], i] - value))

    kept = int(result.kept.sum())
    print(f"kept at threshold {THRESHOLD}: {kept} of {N_ITEMS} items, "
          f"mean best-pair rho {result.best_rho[result.kept].mean():.4f}")
    for row in summary.itertuples(index=False):
        print(f"  {row.model}: mean rho {row.mean_rho:.4f} over {row.items} kept items")
    print(f"vectorised (agreement + filtering + model correlation, {N_ITEMS} items): "
          f"{vector_seconds:.4f} s wall, {vector_cpu:.4f} s CPU (best of 7)")
    print(f"  same on shuffled rows (information): {shuffled_seconds:.4f} s wall, identical best rho")
    print(f"scipy.stats.spearmanr loop: {loop_seconds:.3f} s on {LOOP_ITEMS} items, "
          f"extrapolated to {N_ITEMS} items: {loop_extrapolated:.2f} s")
    speedup = loop_extrapolated / vector_seconds
    print(f"speed-up: {speedup:.0f}x")
    print(f"check on {LOOP_ITEMS} items: max |best rho diff| = {rho_diff:.2e}, "
          f"max |model rho diff| = {model_diff:.2e}, best-pair mismatches = {pair_mismatch}, "
          f"keep mismatches = {keep_mismatch}")
    identical = rho_diff < 1e-12 and model_diff < 1e-12 and pair_mismatch == 0 and keep_mismatch == 0
    print(f"targets: <= {TARGET_SECONDS} s -> {'met' if vector_seconds <= TARGET_SECONDS else 'MISSED'}; "
          f">= {TARGET_SPEEDUP}x -> {'met' if speedup >= TARGET_SPEEDUP else 'MISSED'}; "
          f"values equal within 1e-12 -> {'yes' if identical else 'NO'}")
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
