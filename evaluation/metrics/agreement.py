"""Metric agreement with human majorities over the pairwise judgments stored on the platform.

Reads the completed pairwise items (``evaluation.metrics.selectors.human_pairs``) and the human
judgments (``annotation.selectors.pairwise_battles``), scores every model output once with each
metric against its instance's human-verified reference, turns scores (and an optional LLM judge
file) into picks, and hands the numbers to ``stats.metric_agreement``.

As in the paper, only model-vs-model pairs count: a reference-backed metric compares a
reference with itself when the reference is one side. Pairs whose human vote is an even split
have no majority to reconstruct and are left out too; the report counts both.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernel.errors import ServiceError
from stats.metric_agreement import (
    MetricAgreement,
    compare_with_humans,
    pick_by_score,
    pick_from_verdicts,
)

from .judge_file import JudgeBattle
from .registry import METRICS, make_metric
from .selectors import human_pairs

JUDGE = "judge"


class NoPairsToCompare(ServiceError):
    """No completed model-vs-model pairwise items with a human majority and a verified reference."""

    status_code = 404


@dataclass(frozen=True)
class AgreementReport:
    result: MetricAgreement
    pairs: pd.DataFrame  # the pairs compared, with each metric's pick
    counts: dict
    metrics: list[dict] = field(default_factory=list)  # what each metric used

    def to_dict(self) -> dict:
        return {**self.result.to_dict(), "pairs": self.counts, "metric_settings": self.metrics}


def _rng(seed: int, name: str) -> np.random.Generator:
    """One stream per metric: adding or removing a metric never changes another's tie-breaks."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def _votes_per_side(pairs: pd.DataFrame, round_id: int | None) -> pd.DataFrame:
    from annotation.models import CollectionRound
    from annotation.selectors import pairwise_battles

    round_ = CollectionRound.objects.get(pk=round_id) if round_id is not None else None
    battles = pairwise_battles(round_)
    battles = battles[battles["item_id"].isin(pairs["pair_id"])]
    counts = pd.crosstab(battles["item_id"], battles["winner"]).reindex(columns=["model_a", "model_b"], fill_value=0)
    return counts.rename(columns={"model_a": "votes_a", "model_b": "votes_b"})


def _judge_verdicts(pairs: pd.DataFrame, battles: Sequence[JudgeBattle]) -> tuple[list[str | None], int]:
    """The judge's winner per pair, oriented to the pair's sides (None when not judged), and the
    number of judge battles that matched no compared pair."""
    by_pair = {(battle.instance_id, battle.model_a, battle.model_b): battle.winner for battle in battles}
    flipped = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
    verdicts, used = [], set()
    for row in pairs.itertuples():
        key = (row.instance_id, row.model_a, row.model_b)
        swapped = (row.instance_id, row.model_b, row.model_a)
        if key in by_pair:
            verdicts.append(by_pair[key])
            used.add(key)
        elif swapped in by_pair:
            verdicts.append(flipped[by_pair[swapped]])
            used.add(swapped)
        else:
            verdicts.append(None)
    return verdicts, len(by_pair) - len(used)


def metric_agreement(
    *,
    round_id: int | None = None,
    metric_names: Sequence[str] | None = None,
    seed: int = 0,
    judge_battles: Sequence[JudgeBattle] | None = None,
    judge_label: str = "LLM judge",
    confidence: float = 0.95,
    interval: str = "wilson",
    metric_options: dict | None = None,
    progress: Callable[[str], object] | None = None,
) -> AgreementReport:
    """Accuracy of each metric (and the judge) at reconstructing the human majority, per level."""
    names = list(metric_names) if metric_names is not None else list(METRICS)
    metrics = [make_metric(name, seed=seed, **(metric_options or {})) for name in names]

    all_pairs = human_pairs(round_id=round_id)
    against_reference = all_pairs["against_reference"]
    tied = ~against_reference & (all_pairs["human_winner"] == "tie")
    unreferenced = ~against_reference & ~tied & all_pairs["reference"].isna()
    pairs = all_pairs[~(against_reference | tied | unreferenced)].reset_index(drop=True)
    counts = {
        "completed_items": len(all_pairs),
        "compared": len(pairs),
        "excluded_against_reference": int(against_reference.sum()),
        "excluded_even_split": int(tied.sum()),
        "excluded_without_reference": int(unreferenced.sum()),
    }
    if pairs.empty:
        where = f"round {round_id}" if round_id is not None else "the database"
        raise NoPairsToCompare(
            f"no completed model-vs-model pairwise items with a human majority and a verified reference in {where}"
        )
    pairs = pairs.join(_votes_per_side(pairs, round_id), on="pair_id")
    pairs[["votes_a", "votes_b"]] = pairs[["votes_a", "votes_b"]].fillna(0).astype(int)

    # Each output is scored once, all together (CIDEr's document frequencies span the set).
    outputs = pd.concat([
        pairs[["output_a_id", "text_a", "reference", "language"]].set_axis(["output_id", "text", "reference", "language"], axis=1),
        pairs[["output_b_id", "text_b", "reference", "language"]].set_axis(["output_id", "text", "reference", "language"], axis=1),
    ]).drop_duplicates("output_id").sort_values("output_id").set_index("output_id")
    picks, labels = {}, {}
    for metric in metrics:
        if progress is not None:
            progress(f"{metric.label}: scoring {len(outputs)} outputs")
        scores = pd.Series(
            metric.score(outputs["text"].tolist(), outputs["reference"].tolist(), outputs["language"].tolist()),
            index=outputs.index,
        )
        score_a = scores.loc[pairs["output_a_id"]].to_numpy()
        score_b = scores.loc[pairs["output_b_id"]].to_numpy()
        picks[metric.name] = pick_by_score(score_a, score_b, _rng(seed, metric.name))
        labels[metric.name] = metric.label
        pairs[f"{metric.name}_a"], pairs[f"{metric.name}_b"] = score_a, score_b
    if judge_battles is not None:
        verdicts, unmatched = _judge_verdicts(pairs, judge_battles)
        picks[JUDGE] = pick_from_verdicts(verdicts, _rng(seed, JUDGE))
        labels[JUDGE] = judge_label
        counts["judge_battles"] = len(judge_battles)
        counts["judge_pairs_matched"] = sum(verdict is not None for verdict in verdicts)
        counts["judge_battles_unmatched"] = unmatched
        counts["judge_ties"] = sum(verdict == "tie" for verdict in verdicts)
    for name, metric_picks in picks.items():
        pairs[f"{name}_pick"] = np.where(metric_picks == 1, "model_a", np.where(metric_picks == 0, "model_b", None))

    result = compare_with_humans(pairs, picks, confidence=confidence, interval=interval, labels=labels)
    described = [metric.describe() for metric in metrics]
    return AgreementReport(result=result, pairs=pairs, counts=counts, metrics=described)
