"""Uniform against active pair sampling with a simulated crowd (issue #29).

Run from the repository root::

    python bench/sampling.py                       # 20 seeds, goal: separate adjacent ranks at 95 %
    python bench/sampling.py --seeds 0-39 --goal width --width 60

The crowd answers from a known Bradley–Terry model: 20 models whose Elo ratings are spread evenly
over the published VisIT-Bench leaderboard's range (786 to 1223: the bottom and top ratings the
paper reports), a pool of workers each with their own sensitivity (the rating gap is multiplied
by a log-normal factor per worker) and 10 % random clickers who answer 50/50. Such a crowd is not
exactly Bradley–Terry, so the truth the intervals are checked against is the crowd's own
Bradley–Terry rating: the fit of its exact win probabilities over all pairs equally (the
generating ratings compressed by the noise, in the same order).

Both samplers collect judgments in the same batches (``batch_size``) and test the goal after each
one, with the same fit and the same intervals (inverse information; the sandwich's coverage is printed
too); only the choice of pairs differs. For
each seed the table gives the judgments each needed to reach the goal (or the budget), and at
that point the coverage of the 95 % rating intervals (share of models whose interval holds the
truth), Kendall's tau with the true order and the share of declared separations that are right.
"Equal judgments" compares uniform at the judgments the active sampler needed.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stats.active_sampling import (  # noqa: E402
    ELO_PER_NAT,
    Goal,
    _contrasts,
    all_pairs,
    batch_size,
    choose_pairs,
    fit,
    progress,
)

PUBLISHED_RANGE = (786.0, 1223.0)


@dataclass
class Crowd:
    truth: np.ndarray  # generating Elo ratings
    sensitivity: np.ndarray  # per worker; 0 for a random clicker
    crowd_rating: np.ndarray  # Bradley–Terry rating of the crowd's exact win probabilities

    def answer(self, pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """1 where the first model of the pair wins, one random worker per judgment."""
        workers = rng.integers(0, self.sensitivity.shape[0], pairs.shape[0])
        gap = (self.truth[pairs[:, 0]] - self.truth[pairs[:, 1]]) / ELO_PER_NAT
        return (rng.random(pairs.shape[0]) < expit(self.sensitivity[workers] * gap)).astype(np.int64)


def make_crowd(*, models: int, workers: int, clickers: float, noise: float, rng: np.random.Generator) -> Crowd:
    truth = np.linspace(*PUBLISHED_RANGE, models)
    truth = truth[rng.permutation(models)]  # model ids carry no order
    sensitivity = rng.lognormal(0.0, noise, workers)
    sensitivity[rng.random(workers) < clickers] = 0.0
    gap = (truth[:, None] - truth[None, :]) / ELO_PER_NAT
    probability = expit(sensitivity[:, None, None] * gap[None]).mean(axis=0)
    np.fill_diagonal(probability, 0.0)
    crowd_rating = fit(probability * 1e6, prior_ties=0).ratings
    return Crowd(truth, sensitivity, crowd_rating)


@dataclass
class Snapshot:
    judgments: int
    done: int
    total: int
    coverage: float
    coverage_sandwich: float
    tau: float
    right_separations: float


def snapshot(wins: np.ndarray, goal: Goal, crowd: Crowd, judgments: int) -> Snapshot:
    estimate = fit(wins)
    state = progress(goal, estimate)
    low, high = estimate.interval(0.95)
    covered = float(((low <= crowd.crowd_rating) & (crowd.crowd_rating <= high)).mean())
    low, high = fit(wins, sandwich=True).interval(0.95)
    covered_sandwich = float(((low <= crowd.crowd_rating) & (crowd.crowd_rating <= high)).mean())
    tau = float(kendalltau(estimate.ratings, crowd.truth).statistic)
    vectors, unresolved = _contrasts(goal, estimate)
    declared = vectors[~unresolved]
    if goal.kind != "width" and declared.shape[0]:
        right = float((np.sign(declared @ estimate.ratings) == np.sign(declared @ crowd.truth)).mean())
    else:
        right = float("nan")
    return Snapshot(judgments, state.done, state.total, covered, covered_sandwich, tau, right)


def run(sampler: str, *, crowd: Crowd, goal: Goal, budget: int, seed: int, exploration: float
        ) -> list[tuple[int, np.ndarray]]:
    """One round to the goal (or the budget): the judgments and the win matrix after each batch."""
    rng = np.random.default_rng([seed, 1 if sampler == "active" else 0])
    m = crowd.truth.shape[0]
    pairs_all = all_pairs(m)
    wins = np.zeros((m, m))
    judgments = 0
    history = []
    estimate = None
    while judgments < budget:
        count = min(batch_size(judgments, models=m), budget - judgments)
        if sampler == "active":
            pairs = np.array(choose_pairs(wins, goal, count=count, rng=rng, exploration=exploration,
                                          estimate=estimate))
        else:
            pairs = pairs_all[rng.integers(0, pairs_all.shape[0], count)]
        first_wins = crowd.answer(pairs, rng)
        winner = np.where(first_wins == 1, pairs[:, 0], pairs[:, 1])
        loser = np.where(first_wins == 1, pairs[:, 1], pairs[:, 0])
        np.add.at(wins, (winner, loser), 1.0)
        judgments += count
        history.append((judgments, wins.copy()))
        estimate = fit(wins)
        if progress(goal, estimate).met:
            break
    return history


def seeds_arg(text: str) -> list[int]:
    seeds = []
    for part in text.split(","):
        if "-" in part:
            first, last = part.split("-")
            seeds.extend(range(int(first), int(last) + 1))
        else:
            seeds.append(int(part))
    return seeds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0-19"), help="e.g. 0-19 or 1,2,5")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--clickers", type=float, default=0.10, help="share of random clickers")
    parser.add_argument("--noise", type=float, default=0.3, help="sd of the log sensitivity per worker")
    parser.add_argument("--goal", choices=["adjacent", "width", "top_k"], default="adjacent")
    parser.add_argument("--width", type=float, default=None)
    parser.add_argument("--k", type=int, default=None)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--exploration", type=float, default=0.1)
    parser.add_argument("--budget", type=int, default=1_000_000)
    args = parser.parse_args()
    goal = Goal(kind=args.goal, level=args.level, width=args.width, k=args.k)

    started = time.perf_counter()
    print(f"goal: {goal.describe()}; {args.models} models over Elo {PUBLISHED_RANGE[0]:g}-{PUBLISHED_RANGE[1]:g}, "
          f"{args.workers} workers ({args.clickers:.0%} random clickers, log-sensitivity sd {args.noise}), "
          f"exploration {args.exploration:.0%}, budget {args.budget:,}")
    header = (f"{'seed':>4} {'uniform n':>10} {'active n':>9} {'ratio':>6} | {'cov u':>5} {'cov a':>5} "
              f"{'tau u':>5} {'tau a':>5} {'sep u':>5} {'sep a':>5} | equal n: {'done u':>6} {'done a':>6} "
              f"{'tau u':>5} {'cov u':>5}")
    print(header)
    rows = []
    for seed in args.seeds:
        crowd = make_crowd(models=args.models, workers=args.workers, clickers=args.clickers, noise=args.noise,
                           rng=np.random.default_rng([seed, 2]))
        uniform = run("uniform", crowd=crowd, goal=goal, budget=args.budget, seed=seed, exploration=args.exploration)
        active = run("active", crowd=crowd, goal=goal, budget=args.budget, seed=seed, exploration=args.exploration)
        u_end = snapshot(uniform[-1][1], goal, crowd, uniform[-1][0])
        a_end = snapshot(active[-1][1], goal, crowd, active[-1][0])
        # Uniform at the active sampler's judgments (both use the same batch schedule).
        equal = next((entry for entry in uniform if entry[0] >= a_end.judgments), uniform[-1])
        at_equal = snapshot(equal[1], goal, crowd, equal[0])
        rows.append((u_end, a_end, at_equal))
        print(f"{seed:>4} {u_end.judgments:>10,} {a_end.judgments:>9,} {a_end.judgments / u_end.judgments:>6.2f} | "
              f"{u_end.coverage:>5.2f} {a_end.coverage:>5.2f} {u_end.tau:>5.2f} {a_end.tau:>5.2f} "
              f"{u_end.right_separations:>5.2f} {a_end.right_separations:>5.2f} | "
              f"        {at_equal.done:>3}/{at_equal.total:<2} {a_end.done:>3}/{a_end.total:<2} "
              f"{at_equal.tau:>5.2f} {at_equal.coverage:>5.2f}", flush=True)

    def column(index, name):
        return np.array([getattr(row[index], name) for row in rows], dtype=float)

    reached_u = column(0, "done") >= column(0, "total")
    reached_a = column(1, "done") >= column(1, "total")
    median_u, median_a = np.median(column(0, "judgments")), np.median(column(1, "judgments"))
    ratio = median_a / median_u
    print()
    print(f"goal reached: uniform {int(reached_u.sum())}/{len(rows)}, active {int(reached_a.sum())}/{len(rows)} seeds")
    print(f"judgments needed (median): uniform {median_u:,.0f}, active {median_a:,.0f}, ratio {ratio:.2f} "
          f"(median of per-seed ratios {np.median(column(1, 'judgments') / column(0, 'judgments')):.2f})")
    print(f"95 % interval coverage at the goal (mean over models and seeds): uniform {column(0, 'coverage').mean():.3f}, "
          f"active {column(1, 'coverage').mean():.3f} (sandwich intervals: uniform "
          f"{column(0, 'coverage_sandwich').mean():.3f}, active {column(1, 'coverage_sandwich').mean():.3f})")
    print(f"Kendall tau with the true order at the goal (mean): uniform {column(0, 'tau').mean():.3f}, "
          f"active {column(1, 'tau').mean():.3f}")
    if goal.kind != "width":
        print(f"declared separations in the true order (mean): uniform {np.nanmean(column(0, 'right_separations')):.3f}, "
              f"active {np.nanmean(column(1, 'right_separations')):.3f}")
    print(f"at equal judgments (active's): contrasts resolved uniform {column(2, 'done').mean():.1f} vs active "
          f"{column(1, 'done').mean():.1f} of {column(1, 'total').mean():.0f}; tau uniform {column(2, 'tau').mean():.3f} "
          f"vs active {column(1, 'tau').mean():.3f}; coverage uniform {column(2, 'coverage').mean():.3f}")
    met = (ratio <= 0.6 and column(1, "coverage").mean() >= 0.93
           and column(1, "tau").mean() >= column(0, "tau").mean() - 1e-9)
    print(f"acceptance (active <= 0.6 x uniform, coverage >= 0.93, tau no worse): {'met' if met else 'NOT met'}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
