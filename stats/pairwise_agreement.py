"""Crowd agreement on pairwise judgments: majority vote per pair and worker agreement with it.

Each pair (e.g. two model outputs for one instance) is judged by several workers (five in the
VisIT-Bench paper). Per pair:

* ``winner``: the choice with the most votes;
* ``majority``: the size of that group and ``votes`` the number of votes, read as an agreement
  level ``"majority/votes"`` (5/5, 4/5, 3/5 for five votes);
* ``tie``: True when two or more choices share the largest group (an even split such as 2/4,
  or 2-2-1 over three choices). Tie-break rule: a tied pair has no majority winner; its
  ``winner`` is the tie label (default ``"tie"``) and its level is still the size of the
  largest group.

Per worker: ``agreement`` = share of the worker's votes on pairs with a majority winner that
match that winner (the worker's own vote is part of the majority, as in the usual crowd
agreement rate). Votes on tied pairs are not scored.

Everything is computed with integer codes and ``numpy.bincount``; no Python loop over votes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

TIE_LABEL = "tie"
# Integer ids spanning at most this many values per vote are mapped by direct lookup, not hashing.
_DIRECT_LOOKUP_SPAN_PER_VALUE = 4


def _encode(values: np.ndarray | pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..k-1 and the k sorted distinct values; missing values are errors."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        missing = np.flatnonzero(codes < 0)
        if missing.size:
            raise ValueError(f"row {int(missing[0]) + 1}: missing {name}")
        return codes.astype(np.int64), np.asarray(values.cat.categories)
    array = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    if array.dtype.kind in "iu" and array.size:
        low, high = int(array.min()), int(array.max())
        if high - low <= _DIRECT_LOOKUP_SPAN_PER_VALUE * array.size:
            shifted = np.subtract(array, low, dtype=np.int64)
            present = np.zeros(high - low + 1, dtype=bool)
            present[shifted] = True
            if present.all():  # ids already run low..high: the offset is the code
                return shifted, np.arange(low, high + 1)
            code_of_value = np.cumsum(present) - 1
            return code_of_value[shifted], np.flatnonzero(present) + low
    codes, uniques = pd.factorize(array)
    missing = np.flatnonzero(codes < 0)
    if missing.size:
        raise ValueError(f"row {int(missing[0]) + 1}: missing {name}")
    uniques = np.asarray(uniques)
    try:
        # Sort the few distinct values, then relabel the codes (cheaper than factorize(sort=True)).
        order = np.argsort(uniques, kind="stable")
    except TypeError:  # values of mixed types cannot be sorted; keep first-seen order
        return codes.astype(np.int64, copy=False), uniques
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[codes], uniques[order]


@dataclass(frozen=True, eq=False)
class MajorityVotes:
    """Per-pair majority outcome and, when worker ids were given, per-worker agreement."""

    pairs: pd.DataFrame  # index pair id: winner, majority, votes, level, tie
    workers: pd.DataFrame | None  # index worker id: votes, scored_votes, agreements, agreement

    def level_counts(self) -> pd.Series:
        """Number of pairs per agreement level, most votes and largest majority first."""
        return self.pairs["level"].value_counts(sort=False).rename("pairs")


def majority_vote_arrays(
    pair_ids: np.ndarray | pd.Series,
    choices: np.ndarray | pd.Series,
    worker_ids: np.ndarray | pd.Series | None = None,
    *,
    tie_label: str = TIE_LABEL,
) -> MajorityVotes:
    """Majority vote from one entry per vote: the pair judged, the choice and optionally the worker."""
    pair_codes, pair_index = _encode(pair_ids, "pair id")
    choice_codes, choice_labels = _encode(choices, "choice")
    if len(pair_codes) != len(choice_codes):
        raise ValueError("pair ids and choices differ in length")
    if len(pair_codes) == 0:
        raise ValueError("no votes")
    n_pairs, n_choices = len(pair_index), len(choice_labels)

    cells = pair_codes * n_choices + choice_codes  # one (pair, choice) cell per vote
    counts = np.bincount(cells, minlength=n_pairs * n_choices).reshape(n_pairs, n_choices)
    majority = counts.max(axis=1)
    votes = counts.sum(axis=1)
    top_choice = counts.argmax(axis=1)
    tie = (counts == majority[:, None]).sum(axis=1) > 1

    labels = [str(label) if not isinstance(label, str) else label for label in choice_labels.tolist()]
    categories = list(dict.fromkeys(labels + [tie_label]))
    winner = pd.Categorical.from_codes(np.where(tie, categories.index(tie_label), top_choice), categories=categories)

    # Agreement levels: few distinct (majority, votes) pairs, so label those only.
    max_votes = int(votes.max())
    level_key = votes * (max_votes + 1) + majority
    present = np.zeros((max_votes + 1) ** 2, dtype=bool)
    present[level_key] = True
    keys = np.flatnonzero(present)[::-1]  # most votes, then largest majority, first
    position = np.empty(present.size, dtype=np.int64)
    position[keys] = np.arange(keys.size)
    level_names = [f"{key % (max_votes + 1)}/{key // (max_votes + 1)}" for key in keys]
    level = pd.Categorical.from_codes(position[level_key], categories=level_names, ordered=True)

    pairs = pd.DataFrame(
        {"winner": winner, "majority": majority, "votes": votes, "level": level, "tie": tie},
        index=pd.Index(pair_index, name="pair_id"),
    )

    workers = None
    if worker_ids is not None:
        worker_codes, worker_index = _encode(worker_ids, "worker id")
        if len(worker_codes) != len(pair_codes):
            raise ValueError("worker ids and choices differ in length")
        n_workers = len(worker_index)
        # Status of each (pair, choice) cell: 0 pair tied (vote not scored), 1 decided against
        # this choice, 2 this choice is the winner; one lookup per vote, one bincount per worker.
        cell_status = np.repeat(np.where(tie, 0, 1).astype(np.int8), n_choices)
        decided = np.flatnonzero(~tie)
        cell_status[decided * n_choices + top_choice[decided]] = 2
        per_worker = np.bincount(worker_codes * 3 + cell_status[cells], minlength=n_workers * 3)
        per_worker = per_worker.reshape(n_workers, 3)
        cast = per_worker.sum(axis=1)
        agreements = per_worker[:, 2]
        scored_votes = per_worker[:, 1] + agreements
        with np.errstate(invalid="ignore", divide="ignore"):
            agreement = np.where(scored_votes > 0, agreements / scored_votes, np.nan)
        workers = pd.DataFrame(
            {"votes": cast, "scored_votes": scored_votes, "agreements": agreements, "agreement": agreement},
            index=pd.Index(worker_index, name="worker_id"),
        )
    return MajorityVotes(pairs=pairs, workers=workers)


def majority_vote(
    votes: pd.DataFrame,
    *,
    pair_column: str = "pair_id",
    choice_column: str = "choice",
    worker_column: str | None = "worker_id",
    tie_label: str = TIE_LABEL,
) -> MajorityVotes:
    """Majority vote from a long table with one row per vote (pair_id, worker_id, choice).

    ``worker_column=None`` (or a table without it) skips the per-worker agreement.
    """
    for column in (pair_column, choice_column):
        if column not in votes.columns:
            raise ValueError(f"missing column '{column}'")
    worker_ids = None
    if worker_column is not None and worker_column in votes.columns:
        worker_ids = votes[worker_column]
    return majority_vote_arrays(votes[pair_column], votes[choice_column], worker_ids, tie_label=tie_label)


__all__ = ["TIE_LABEL", "MajorityVotes", "majority_vote", "majority_vote_arrays"]
