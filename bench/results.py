"""Benchmark of the cockpit's leaderboard: what one page costs, computed and from the cache.

Synthetic battles: 8 models with planted strengths over 12 categories, a human-verified reference
among them, fixed seed. For each method, three timings in the same run:

* baseline: what ``manage.py ratings --bootstrap 1000 --reference … --plot`` computes (the core's
  default bootstrap size) — ``compute_ratings`` plus the ratings plot;
* page: ``evaluation.results`` computing the page (200 bootstrap rounds, the JSON dict and both
  plots);
* cached: the same page read back from the cache (a pickled result, as with Redis).

Run from the repository root: ``python bench/results.py [--battles 20000]``.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from evaluation.results import PAGE_BOOTSTRAP_ROUNDS, leaderboard_result  # noqa: E402
from stats.ratings import compute_ratings, plot_ratings  # noqa: E402

SEED = 20261130
MODELS = 8
CATEGORIES = 12


def synthetic_battles(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(SEED)
    names = [f"model-{i}" for i in range(MODELS - 1)] + [settings.ANNOTATION_REFERENCE_SIDE_NAME]
    strength = np.linspace(-1.0, 1.0, MODELS)
    a = rng.integers(0, MODELS, n)
    b = (a + rng.integers(1, MODELS, n)) % MODELS
    p = 1 / (1 + 10 ** (strength[b] - strength[a]))
    winner = np.where(rng.random(n) < p, "model_a", "model_b")
    return pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": winner,
                         "category": rng.integers(0, CATEGORIES, n).astype(str)})


def timed(function, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=20_000)
    args = parser.parse_args(argv)
    frame = synthetic_battles(args.battles)
    reference = settings.ANNOTATION_REFERENCE_SIDE_NAME
    project = SimpleNamespace(slug="bench")
    compute_ratings(frame.head(100), bootstrap=2)  # load the compiled Elo kernels once, outside the timings
    print(f"{args.battles} battles, {MODELS} models, {CATEGORIES} categories; best of 3 runs")
    print(f"{'method':<8}{'baseline (1000 rounds)':>24}{'page (200 rounds)':>20}{'cached':>12}{'page/baseline':>15}"
          f"{'cached/page':>13}")
    for method in ("elo", "bt"):
        def baseline():
            plot_ratings(compute_ratings(frame, method=method, bootstrap=1000, reference=reference))

        def page():
            return leaderboard_result(frame, project=project, source="human", method=method,
                                bootstrap=PAGE_BOOTSTRAP_ROUNDS, seed=0)

        stored = pickle.dumps(page())
        base_s, page_s = timed(baseline), timed(page)
        cached_s = timed(lambda: pickle.loads(stored), repeat=20)
        print(f"{method:<8}{base_s:>23.3f}s{page_s:>19.3f}s{cached_s * 1000:>10.2f}ms{page_s / base_s:>15.3f}"
              f"{cached_s / page_s:>13.5f}")


if __name__ == "__main__":
    main()
