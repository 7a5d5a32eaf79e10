"""Worker quality from categorical judgments: leave-one-out agreement with the majority, a
Dawid–Skene reliability per worker, and the reliability-weighted labels beside the plain majority.

Pure numpy / pandas (and crowd-kit's maintained Dawid–Skene); no Django. Input is one vote per row:
the task (pair or item) judged, the worker and the label chosen.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .pairwise_agreement import _encode


def leave_one_out_agreement(
    task_ids: np.ndarray | pd.Series, labels: np.ndarray | pd.Series, worker_ids: np.ndarray | pd.Series,
) -> pd.DataFrame:
    """Per worker: ``scored`` votes and ``agreements``, the share ``agreement`` of the worker's votes
    that match the majority of the *other* votes on the same task. A vote whose task has no other
    vote, or whose other votes are tied, is not scored (so a worker's own vote never props up the
    majority it is compared with)."""
    task_codes, _tasks = _encode(task_ids, "task id")
    label_codes, labels_index = _encode(labels, "label")
    worker_codes, worker_index = _encode(worker_ids, "worker id")
    n_labels = len(labels_index)
    counts = np.bincount(task_codes * n_labels + label_codes,
                         minlength=len(_tasks) * n_labels).reshape(len(_tasks), n_labels)
    others = counts[task_codes].copy()  # one row per vote: the task's counts
    rows = np.arange(len(task_codes))
    others[rows, label_codes] -= 1  # without the vote itself
    top = others.max(axis=1)
    unique_top = (others == top[:, None]).sum(axis=1) == 1
    scored = unique_top & (top > 0)
    agree = scored & (others[rows, label_codes] == top)
    n_workers = len(worker_index)
    scored_n = np.bincount(worker_codes, weights=scored, minlength=n_workers).astype(int)
    agree_n = np.bincount(worker_codes, weights=agree, minlength=n_workers).astype(int)
    votes = np.bincount(worker_codes, minlength=n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(scored_n > 0, agree_n / np.maximum(scored_n, 1), np.nan)
    return pd.DataFrame({"votes": votes, "scored": scored_n, "agreements": agree_n, "agreement": share},
                        index=pd.Index(worker_index, name="worker_id"))


@dataclass(frozen=True, eq=False)
class Reliability:
    workers: pd.Series  # worker id -> probability that the worker's label is the true one (Dawid–Skene)
    labels: pd.Series  # task id -> reliability-weighted (Dawid–Skene) label
    majority: pd.Series  # task id -> plain majority label (None on ties)

    @property
    def differing_tasks(self) -> int:
        """Tasks whose weighted label differs from a decided plain majority."""
        majority = self.majority[self.majority.notna()]
        return int((self.labels.reindex(majority.index) != majority).sum())


def dawid_skene(votes: pd.DataFrame, *, n_iter: int = 100, tol: float = 1e-5) -> Reliability:
    """Dawid–Skene (crowd-kit) on a table with columns ``task``, ``worker``, ``label``.

    A worker's reliability is the model's probability that their labels are right: the posterior
    probability of the label they gave, averaged over their votes (stable on small rounds, unlike the
    diagonal of a confusion matrix estimated from a handful of votes).
    """
    from crowdkit.aggregation import DawidSkene

    for column in ("task", "worker", "label"):
        if column not in votes.columns:
            raise ValueError(f"missing column '{column}'")
    if votes.empty:
        raise ValueError("no votes")
    data = votes[["task", "worker", "label"]].astype({"label": str})
    model = DawidSkene(n_iter=n_iter, tol=tol).fit(data)
    probas = model.probas_
    task_rows = probas.index.get_indexer(data["task"])
    label_columns = probas.columns.get_indexer(data["label"])
    right = probas.to_numpy()[task_rows, label_columns]
    reliability = pd.Series(right, index=data["worker"].to_numpy()).groupby(level=0).mean()
    counts = data.groupby(["task", "label"]).size().unstack(fill_value=0)
    top = counts.max(axis=1)
    tied = counts.eq(top, axis=0).sum(axis=1) > 1
    majority = counts.idxmax(axis=1).where(~tied, None)
    return Reliability(workers=reliability.rename("reliability").rename_axis("worker_id"),
                       labels=model.labels_.rename("label"), majority=majority.rename("label"))


__all__ = ["Reliability", "dawid_skene", "leave_one_out_agreement"]
