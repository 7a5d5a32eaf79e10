"""IRR (Image Review Ranking): annotator agreement, agreement filtering and model rank correlation.

Definitions (see docs/irr.md for the full text):

* Each item has ``k >= 2`` reviews. Every annotator of the item ranks all of them: their ranks are
  a permutation of ``1..k`` (1 = best).
* Spearman's rho between two tie-free rankings of ``k`` reviews is ``1 - 6 * sum(d**2) / (k * (k**2 - 1))``.
  It is evaluated as the single division ``(k*(k**2-1) - 6*sum(d**2)) / (k*(k**2-1))`` of two
  integers, so a rho that is exactly a decimal such as 0.6 compares equal to that threshold.
  Rankings with ties (model scores) use the tie-aware form: Pearson's r on average ranks.
* Per item, rho is computed for every annotator pair. The best pair is the one with the highest rho;
  when several pairs share it (within ``RHO_TOLERANCE``), the pair ``(a, b)`` with ``a < b`` that
  comes first in ``(a, b)`` order wins, annotator ids being compared as text (``str``).
* An item is kept when its best rho >= the threshold (default 0.6). Items with fewer than two
  annotators have no pair: they are not evaluable and never kept.
* A model's score on an item is the mean of its rho with each annotator of the best pair; a model
  is reported as the mean of that score over kept items.

Nothing here imports Django: the management command ``irr_report`` reads files, calls
``irr_report`` below and writes the results.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import rankdata

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_THRESHOLD = 0.6
# Two rho values closer than this are the same value (float rounding of the tie-aware formula).
# Tie-free rho values for k reviews are 6 / (k * (k**2 - 1)) apart, far more than this for any
# realistic k.
RHO_TOLERANCE = 1e-9

ITEM = "item_id"
ANNOTATOR = "annotator_id"
REVIEW = "review_id"
RANK = "rank"
MODEL = "model"
SCORE = "score"
LANGUAGE = "language"
PROMPT_RANK = "prompt_rank"
RANKING_COLUMNS = (ITEM, ANNOTATOR, REVIEW, RANK)
MODEL_ID_COLUMNS = (ITEM, MODEL, REVIEW)

HEADER_ROW = "header"  # IRRInputError.row for problems with the columns themselves
RANKINGS_SOURCE = "rankings"
MODEL_SCORES_SOURCE = "model scores"
PROMPT_RANK_MODEL = "prompt rank"
PROMPT_SWEEP_COLUMN = "mean_rho_prompt_rank"


class IRRInputError(ValueError):
    """Input that cannot be evaluated, located by source, row and field.

    ``row`` is the DataFrame index label of the offending row; the CSV readers below index data
    rows from 1, so for files it is the 1-based data row.
    """

    def __init__(self, reason: str, *, source: str, row: object = None, field: str | None = None):
        self.reason = reason
        self.source = source
        self.row = row
        self.field = field
        super().__init__(self.describe())

    def describe(self, source: str | None = None) -> str:
        where = [source or self.source]
        if self.row == HEADER_ROW:
            where.append("header row")
        elif self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ", ".join(where) + ": " + self.reason


@dataclass(frozen=True)
class SweepThreshold:
    """One column of the paper's threshold sweep (Table 4, Figure 4).

    ``minimum`` None means no filtering at all ("none"; Figure 4's "Nan"): every item counts.
    Otherwise items whose best rho >= minimum are kept. "<0" (Table 4) is a negative threshold: it
    drops nothing by correlation, so it keeps every evaluable item, including those whose best pair
    disagrees (rho < 0); its cut is -1, the lowest rho there is.
    """

    label: str
    minimum: float | None

    @property
    def json_value(self) -> str | float:
        return self.label if self.minimum is None or self.minimum < 0 else self.minimum


SWEEP_THRESHOLDS = (
    SweepThreshold("none", None),
    SweepThreshold("<0", -1.0),
    SweepThreshold("0", 0.0),
    SweepThreshold("0.2", 0.2),
    SweepThreshold("0.4", 0.4),
    SweepThreshold("0.6", 0.6),
    SweepThreshold("0.8", 0.8),
)


# --------------------------------------------------------------------------- validated input


@dataclass(frozen=True)
class RankingBlock:
    """Items that share the number of reviews ``k`` and of annotators ``n``, stacked densely."""

    items: np.ndarray  # (m,) item codes
    ranks: np.ndarray  # (m, n, k) float ranks; annotators ordered by id text, reviews by slot
    annotators: np.ndarray  # (m, n) annotator codes
    tie_free: np.ndarray  # (m, n) True where that annotator's ranks are a permutation of 1..k


@dataclass(frozen=True)
class RankingTable:
    """Validated rankings in array form.

    Codes index ``item_ids`` (first-appearance order) and ``annotator_ids`` (sorted by text, so
    annotator code order is the tie-break order). Reviews of item ``i`` occupy slots
    ``0..review_counts[i]-1``.
    """

    item_ids: np.ndarray
    annotator_ids: np.ndarray
    review_ids: np.ndarray
    review_counts: np.ndarray  # k per item
    annotator_counts: np.ndarray  # annotators per item
    item_review_keys: np.ndarray  # item_code * len(review_ids) + review_code, one per (item, review)
    item_review_slots: np.ndarray  # slot of each entry of item_review_keys
    review_items: np.ndarray | None  # item code per review code when no review id is shared by items
    blocks: tuple[RankingBlock, ...]
    languages: np.ndarray | None  # per item, object array (None where unknown)
    prompt_ranks: np.ndarray | None  # (items, max k) prompt rank per review slot, NaN padding
    # The input rows as codes, for per-row summaries such as the prompt-rank distribution.
    row_items: np.ndarray
    row_slots: np.ndarray
    row_ranks: np.ndarray
    row_tie_free: np.ndarray  # False on rows of annotators allowed ties (a model counted as annotator)

    @property
    def max_reviews(self) -> int:
        return int(self.review_counts.max())

    @cached_property
    def _item_index(self) -> pd.Index:
        return pd.Index(self.item_ids)

    @cached_property
    def _review_index(self) -> pd.Index:
        return pd.Index(self.review_ids)

    def item_codes_of(self, item_ids: pd.Series) -> np.ndarray:
        """Item code of each id; -1 where the rankings have no such item."""
        return self._item_index.get_indexer(item_ids)

    def review_slots_of(self, item_codes: np.ndarray, review_ids: pd.Series) -> np.ndarray:
        """Slot of each (item, review); -1 where the item has no such review."""
        review_codes = self._review_index.get_indexer(review_ids)
        unknown = (review_codes < 0) | (item_codes < 0)
        if self.review_items is not None:
            # Review ids are unique to their item: the review code alone gives item and slot.
            slots = self.item_review_slots[review_codes]
            slots[unknown | (self.review_items[review_codes] != item_codes)] = -1
            return slots
        keys = item_codes * len(self.review_ids) + review_codes
        positions = pd.Index(self.item_review_keys).get_indexer(keys)
        slots = self.item_review_slots[positions]
        slots[unknown | (positions < 0)] = -1
        return slots


def _dense_codes(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Number distinct keys 0..m-1 in increasing key order; returns (codes, sorted distinct keys)."""
    if size <= max(4 * len(keys), 1 << 16):
        # A presence table is cheaper than hashing or sorting when the key space is small.
        present = np.zeros(size, dtype=bool)
        present[keys] = True
        code_of_key = np.cumsum(present) - 1
        return code_of_key[keys], np.flatnonzero(present)
    codes, distinct = pd.factorize(keys)
    order = np.argsort(distinct, kind="stable")
    sorted_position = np.empty_like(order)
    sorted_position[order] = np.arange(len(order))
    return sorted_position[codes], distinct[order]


def _slots_within(groups: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Number the members of each group 0..count-1, keeping their order within the group."""
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    order = np.argsort(groups, kind="stable")
    slots = np.empty(len(groups), dtype=np.int64)
    slots[order] = np.arange(len(groups)) - starts[groups[order]]
    return slots


def _codes(frame: pd.DataFrame, column: str, *, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (first-appearance order) and distinct values; a missing value is an error."""
    codes, values = pd.factorize(frame[column])
    if len(codes) and codes.min() < 0:
        raise IRRInputError("missing value", source=source, row=frame.index[int(np.argmax(codes < 0))],
                            field=column)
    return codes.astype(np.int64, copy=False), np.asarray(values, dtype=object)


def _require_columns(frame: pd.DataFrame, columns: Iterable[str], *, source: str) -> None:
    for column in columns:
        if column not in frame.columns:
            found = ", ".join(map(str, frame.columns)) or "no columns"
            raise IRRInputError(f"missing column '{column}' (found: {found})", source=source, row=HEADER_ROW,
                                field=column)


def _require_present(frame: pd.DataFrame, columns: Iterable[str], *, source: str) -> None:
    for column in columns:
        missing = frame[column].isna().to_numpy()
        if missing.any():
            raise IRRInputError("missing value", source=source, row=frame.index[int(np.argmax(missing))],
                                field=column)


def _numbers(frame: pd.DataFrame, column: str, *, source: str, integer: bool) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if integer:
        bad |= values != np.round(values)
    if bad.any():
        position = int(np.argmax(bad))
        kind = "an integer" if integer else "a finite number"
        raise IRRInputError(f"{frame[column].iloc[position]!r} is not {kind}", source=source,
                            row=frame.index[position], field=column)
    return values


def _per_item_value(frame: pd.DataFrame, column: str, item_codes: np.ndarray, n_items: int, *,
                    source: str) -> np.ndarray:
    """One value of ``column`` per item; an item whose rows disagree is an error."""
    values = frame[column].to_numpy(dtype=object)
    values = np.where(pd.isna(values), None, values)  # NaN never equals itself; None does
    per_item = np.full(n_items, None, dtype=object)
    per_item[item_codes[::-1]] = values[::-1]  # reversed so the first row of each item wins
    disagree = per_item[item_codes] != values
    if disagree.any():
        position = int(np.argmax(disagree))
        raise IRRInputError(
            f"item {frame[ITEM].iloc[position]!r} has {column} {values[position]!r} here but "
            f"{per_item[item_codes[position]]!r} on an earlier row", source=source, row=frame.index[position],
            field=column)
    return per_item


def build_ranking_table(rankings: pd.DataFrame, *, tied_annotators: Collection = ()) -> RankingTable:
    """Validate long-format rankings and lay them out as dense arrays.

    ``rankings`` has columns item_id, annotator_id, review_id, rank, and optionally language and
    prompt_rank. Each annotator's ranks for an item must be a permutation of 1..k over the item's
    k >= 2 review ids, else IRRInputError names the item, annotator, row and field.
    ``tied_annotators`` may give average ranks with ties (a model counted as an annotator).
    """
    source = RANKINGS_SOURCE
    _require_columns(rankings, RANKING_COLUMNS, source=source)
    if len(rankings) == 0:
        raise IRRInputError("no rankings (the table has no rows)", source=source)
    _require_present(rankings, (RANK,), source=source)
    tied_rows = (rankings[ANNOTATOR].isin(list(tied_annotators)).to_numpy() if tied_annotators
                 else np.zeros(len(rankings), dtype=bool))
    rank_values = rankings[RANK].to_numpy()
    if not np.issubdtype(rank_values.dtype, np.integer):
        # Tied annotators may hold average ranks such as 2.5; everyone else must give integers.
        rank_values = _numbers(rankings, RANK, source=source, integer=False)
        fractional = (rank_values != np.round(rank_values)) & ~tied_rows
        if fractional.any():
            position = int(np.argmax(fractional))
            raise IRRInputError(f"{rankings[RANK].iloc[position]!r} is not an integer", source=source,
                                row=rankings.index[position], field=RANK)
    ranks = rank_values.astype(float, copy=False)

    item_codes, item_ids = _codes(rankings, ITEM, source=source)
    raw_annotator_codes, raw_annotator_ids = _codes(rankings, ANNOTATOR, source=source)
    # Annotator codes follow the text order of the ids, which makes the tie-break a plain argmax.
    text_order = np.argsort(np.array([str(a) for a in raw_annotator_ids], dtype=object), kind="stable")
    code_in_text_order = np.empty_like(text_order)
    code_in_text_order[text_order] = np.arange(len(text_order))
    annotator_codes = code_in_text_order[raw_annotator_codes]
    annotator_ids = np.asarray(raw_annotator_ids)[text_order]
    review_codes, review_ids = _codes(rankings, REVIEW, source=source)
    n_items, n_annotators, n_reviews = len(item_ids), len(annotator_ids), len(review_ids)

    # (item, review) pairs: the item's review set and each review's slot within the item.
    review_items = np.zeros(n_reviews, dtype=np.int64)
    review_items[review_codes] = item_codes
    if (review_items[review_codes] == item_codes).all():
        # Each review id belongs to one item (the usual case): the review code is the pair code.
        pair_codes, pair_items, pair_reviews = review_codes, review_items, np.arange(n_reviews)
    else:
        review_items = None
        pair_codes, pair_keys = _dense_codes(item_codes * n_reviews + review_codes, n_items * n_reviews)
        pair_items, pair_reviews = pair_keys // n_reviews, pair_keys % n_reviews
    review_counts = np.bincount(pair_items, minlength=n_items)
    pair_slots = _slots_within(pair_items, review_counts)
    review_slots = pair_slots[pair_codes]
    max_k = int(review_counts.max())

    # (item, annotator) pairs, numbered by item then annotator text order.
    ia_codes, ia_keys = _dense_codes(item_codes * n_annotators + annotator_codes, n_items * n_annotators)
    ia_items = ia_keys // n_annotators
    ia_annotators = ia_keys % n_annotators
    annotator_counts = np.bincount(ia_items, minlength=n_items)
    ia_slots = _slots_within(ia_items, annotator_counts)
    n_ia = len(ia_keys)

    def fail(position: int, field: str, reason: str) -> None:
        raise IRRInputError(reason, source=source, row=rankings.index[position], field=field)

    def who(position: int) -> str:
        return (f"item {item_ids[item_codes[position]]!r}, annotator "
                f"{annotator_ids[annotator_codes[position]]!r}")

    k_of_row = review_counts[item_codes]
    too_few = k_of_row < 2
    if too_few.any():
        position = int(np.argmax(too_few))
        fail(position, REVIEW, f"item {item_ids[item_codes[position]]!r} has {int(k_of_row[position])} review; "
                               "ranking needs at least 2")
    review_key = ia_codes * max_k + review_slots
    repeated = _repeats(review_key, n_ia * max_k)
    if repeated.any():
        position = int(np.argmax(repeated))
        fail(position, REVIEW, f"{who(position)}: review {rankings[REVIEW].iloc[position]!r} is ranked twice")
    out_of_range = (ranks < 1) | (ranks > k_of_row)
    if out_of_range.any():
        position = int(np.argmax(out_of_range))
        fail(position, RANK, f"{who(position)}: rank {ranks[position]:g} is outside 1..{k_of_row[position]}"
                             " (ranks must be a permutation of 1..k)")
    permutation_rows = ~tied_rows
    rank_key = ia_codes * max_k + (ranks.astype(np.int64) - 1)
    repeated = _repeats(np.where(permutation_rows, rank_key, -1), n_ia * max_k) & permutation_rows
    if repeated.any():
        position = int(np.argmax(repeated))
        fail(position, RANK, f"{who(position)}: rank {int(ranks[position])} appears twice, so the ranks are not a "
                             f"permutation of 1..{k_of_row[position]}")
    ranked_reviews = np.bincount(ia_codes, minlength=n_ia)
    short = ranked_reviews[ia_codes] != k_of_row
    if short.any():
        position = int(np.argmax(short))
        ranked = review_slots[ia_codes == ia_codes[position]]
        missing_slot = np.setdiff1d(np.arange(k_of_row[position]), ranked)[0]
        of_item = pair_items == item_codes[position]
        missing_review = review_ids[pair_reviews[of_item][pair_slots[of_item] == missing_slot][0]]
        fail(position, REVIEW, f"{who(position)}: ranked {ranked_reviews[ia_codes[position]]} of the item's "
                               f"{k_of_row[position]} reviews (missing {missing_review!r}), so the ranks are not a "
                               f"permutation of 1..{k_of_row[position]}")
    # A vector of average ranks is tie-free exactly when its sum of squares is that of 1..k.
    sum_squares = np.bincount(ia_codes, weights=ranks * ranks, minlength=n_ia)
    k_of_ia = review_counts[ia_items].astype(float)
    ia_tie_free = np.abs(sum_squares - k_of_ia * (k_of_ia + 1) * (2 * k_of_ia + 1) / 6) < 1e-6

    languages = (_per_item_value(rankings, LANGUAGE, item_codes, n_items, source=source)
                 if LANGUAGE in rankings.columns else None)
    prompt_ranks = (_prompt_ranks(rankings, item_codes, pair_codes, pair_items, pair_slots, review_counts,
                                  source=source) if PROMPT_RANK in rankings.columns else None)

    blocks = _blocks(item_codes, review_counts, annotator_counts, ranks, ia_codes, ia_items, ia_slots,
                     ia_annotators, ia_tie_free, review_slots)
    return RankingTable(
        item_ids=np.asarray(item_ids, dtype=object), annotator_ids=np.asarray(annotator_ids, dtype=object),
        review_ids=np.asarray(review_ids, dtype=object), review_counts=review_counts,
        annotator_counts=annotator_counts, item_review_keys=pair_items * n_reviews + pair_reviews,
        item_review_slots=pair_slots, review_items=review_items, blocks=blocks, languages=languages,
        prompt_ranks=prompt_ranks,
        row_items=item_codes, row_slots=review_slots, row_ranks=ranks, row_tie_free=~tied_rows)


def _repeats(keys: np.ndarray, size: int) -> np.ndarray:
    """True on every occurrence of a key after its first (negative keys are ignored)."""
    valid = keys >= 0
    counts = np.bincount(keys[valid], minlength=size) if valid.any() else np.zeros(size, dtype=np.int64)
    if not (counts > 1).any():
        return np.zeros(len(keys), dtype=bool)
    duplicated = pd.Series(keys).duplicated(keep="first").to_numpy()
    return duplicated & valid


def _prompt_ranks(rankings: pd.DataFrame, item_codes: np.ndarray, pair_codes: np.ndarray, pair_items: np.ndarray,
                  pair_slots: np.ndarray, review_counts: np.ndarray, *, source: str) -> np.ndarray:
    """Prompt rank per (item, review slot): one value per review, a permutation of 1..k per item."""
    values = _numbers(rankings, PROMPT_RANK, source=source, integer=True)
    per_pair = np.zeros(len(pair_items))
    per_pair[pair_codes[::-1]] = values[::-1]  # the first row of each review wins
    disagree = per_pair[pair_codes] != values
    if disagree.any():
        position = int(np.argmax(disagree))
        raise IRRInputError(
            f"review {rankings[REVIEW].iloc[position]!r} of item {rankings[ITEM].iloc[position]!r} has prompt rank "
            f"{int(values[position])} here but {int(per_pair[pair_codes[position]])} on an earlier row",
            source=source, row=rankings.index[position], field=PROMPT_RANK)
    k = review_counts[pair_items]
    max_k = int(review_counts.max())
    bad = (per_pair < 1) | (per_pair > k)
    if not bad.any():
        bad = _repeats(pair_items * max_k + per_pair.astype(np.int64) - 1, len(review_counts) * max_k)
    if bad.any():
        pair = int(np.argmax(bad))
        position = int(np.argmax(pair_codes == pair))
        raise IRRInputError(
            f"prompt ranks of item {rankings[ITEM].iloc[position]!r} are not a permutation of 1..{int(k[pair])}",
            source=source, row=rankings.index[position], field=PROMPT_RANK)
    table = np.full((len(review_counts), max_k), np.nan)
    table[pair_items, pair_slots] = per_pair
    return table


def _blocks(item_codes, review_counts, annotator_counts, ranks, ia_codes, ia_items, ia_slots, ia_annotators,
            ia_tie_free, review_slots) -> tuple[RankingBlock, ...]:
    """Stack items with the same (k, annotator count) into dense arrays; no per-item loop."""
    shape_key = review_counts.astype(np.int64) * (int(annotator_counts.max()) + 1) + annotator_counts
    shapes = np.unique(shape_key)
    position_in_block = np.zeros(len(review_counts), dtype=np.int64)
    blocks = []
    for shape in shapes:  # one pass per distinct (k, n), not per item
        items = np.flatnonzero(shape_key == shape)
        position_in_block[items] = np.arange(len(items))
        k = int(review_counts[items[0]])
        n = int(annotator_counts[items[0]])
        if len(shapes) == 1:
            rows = ia_rows = slice(None)
        else:
            rows = shape_key[item_codes] == shape
            ia_rows = shape_key[ia_items] == shape
        block_ranks = np.zeros((len(items), n, k))
        block_ranks[position_in_block[item_codes[rows]], ia_slots[ia_codes[rows]], review_slots[rows]] = ranks[rows]
        annotators = np.zeros((len(items), n), dtype=np.int64)
        tie_free = np.zeros((len(items), n), dtype=bool)
        at = (position_in_block[ia_items[ia_rows]], ia_slots[ia_rows])
        annotators[at] = ia_annotators[ia_rows]
        tie_free[at] = ia_tie_free[ia_rows]
        blocks.append(RankingBlock(items=items, ranks=block_ranks, annotators=annotators, tie_free=tie_free))
    return tuple(blocks)


# --------------------------------------------------------------------------- correlation kernels


def spearman_tie_free(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """rho = 1 - 6*sum(d^2)/(k(k^2-1)) along the last axis, for permutations of 1..k."""
    k = x.shape[-1]
    scale = k * (k * k - 1)
    d = x - y
    return (scale - 6 * np.einsum("...k,...k->...", d, d)) / scale


def pearson_last_axis(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r along the last axis; NaN where either side is constant (rho undefined)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("...k,...k->...", xc, yc) / np.sqrt(
            np.einsum("...k,...k->...", xc, xc) * np.einsum("...k,...k->...", yc, yc))


def average_ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, lowest score = rank 1, ties get their average rank; NaN rows stay NaN."""
    return rankdata(scores, method="average", axis=-1)


# --------------------------------------------------------------------------- agreement


@dataclass(frozen=True)
class Agreement:
    """Per-item agreement: best pair, its rho and the keep decision at ``threshold``."""

    table: RankingTable
    threshold: float
    best_rho: np.ndarray  # (items,) NaN where not evaluable
    best_annotators: np.ndarray  # (items, 2) annotator codes, -1 where not evaluable
    kept: np.ndarray  # (items,) bool
    pair_rhos: tuple[np.ndarray, ...]  # per block: (m, n*(n-1)/2) rho in (a, b) pair order
    best_pair_ranks: np.ndarray  # (items, 2, max k) ranks given by the best pair, NaN padding

    @property
    def evaluable(self) -> np.ndarray:
        return ~np.isnan(self.best_rho)

    def items_frame(self) -> pd.DataFrame:
        table = self.table
        has_pair = self.best_annotators[:, 0] >= 0
        first = np.full(len(has_pair), None, dtype=object)
        second = np.full(len(has_pair), None, dtype=object)
        first[has_pair] = table.annotator_ids[self.best_annotators[has_pair, 0]]
        second[has_pair] = table.annotator_ids[self.best_annotators[has_pair, 1]]
        columns = {ITEM: table.item_ids}
        if table.languages is not None:
            columns[LANGUAGE] = table.languages
        columns.update({
            "reviews": table.review_counts, "annotators": table.annotator_counts, "annotator_a": first,
            "annotator_b": second, "best_rho": self.best_rho, "evaluable": has_pair, "kept": self.kept})
        return pd.DataFrame(columns)

    def pairs_frame(self) -> pd.DataFrame:
        """rho for every annotator pair of every evaluable item, pairs in tie-break order."""
        frames = []
        for block, rhos in zip(self.table.blocks, self.pair_rhos):
            if rhos.shape[1] == 0:
                continue
            first, second = np.triu_indices(block.annotators.shape[1], 1)
            frames.append(pd.DataFrame({
                ITEM: np.repeat(self.table.item_ids[block.items], len(first)),
                "annotator_a": self.table.annotator_ids[block.annotators[:, first].ravel()],
                "annotator_b": self.table.annotator_ids[block.annotators[:, second].ravel()],
                "rho": rhos.ravel()}))
        if not frames:
            return pd.DataFrame(columns=[ITEM, "annotator_a", "annotator_b", "rho"])
        return pd.concat(frames, ignore_index=True)


def block_pair_rhos(block: RankingBlock) -> np.ndarray:
    """rho for every annotator pair (a < b in tie-break order) of every item in the block."""
    first, second = np.triu_indices(block.ranks.shape[1], 1)
    left, right = block.ranks[:, first, :], block.ranks[:, second, :]
    rhos = spearman_tie_free(left, right)
    both_tie_free = block.tie_free[:, first] & block.tie_free[:, second]
    if not both_tie_free.all():
        rhos = np.where(both_tie_free, rhos, pearson_last_axis(left, right))
    return rhos


def agreement(rankings: pd.DataFrame | RankingTable, *, threshold: float = DEFAULT_THRESHOLD,
              tied_annotators: Collection = ()) -> Agreement:
    """Best annotator pair per item and the keep decision (best rho >= threshold).

    Tie-break: among pairs whose rho equals the best (within RHO_TOLERANCE), the pair (a, b), a < b,
    that comes first in (a, b) order wins, annotator ids compared as text. Items with fewer than two
    annotators get NaN rho, no pair, and are not kept.
    """
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must lie in [-1, 1], got {threshold}")
    table = rankings if isinstance(rankings, RankingTable) else build_ranking_table(
        rankings, tied_annotators=tied_annotators)
    n_items, max_k = len(table.item_ids), table.max_reviews
    best_rho = np.full(n_items, np.nan)
    best_annotators = np.full((n_items, 2), -1, dtype=np.int64)
    best_pair_ranks = np.full((n_items, 2, max_k), np.nan)
    pair_rhos = []
    for block in table.blocks:
        rhos = block_pair_rhos(block)
        pair_rhos.append(rhos)
        if rhos.shape[1] == 0:
            continue  # a lone annotator: no pair, not evaluable
        # An undefined rho (a constant model ranking) never wins.
        comparable = np.where(np.isnan(rhos), -np.inf, rhos)
        best = comparable.max(axis=1)
        # argmax returns the first True: pairs are enumerated in tie-break order.
        winner = np.argmax(comparable >= (best - RHO_TOLERANCE)[:, None], axis=1)
        first, second = np.triu_indices(block.ranks.shape[1], 1)
        slots = np.stack([first[winner], second[winner]], axis=1)
        rows = np.flatnonzero(np.isfinite(best))
        items = block.items[rows]
        k = block.ranks.shape[2]
        best_rho[items] = comparable[rows, winner[rows]]
        best_annotators[items] = block.annotators[rows[:, None], slots[rows]]
        best_pair_ranks[items, :, :k] = block.ranks[rows[:, None], slots[rows]]
    with np.errstate(invalid="ignore"):
        kept = best_rho >= threshold - RHO_TOLERANCE
    return Agreement(table=table, threshold=threshold, best_rho=best_rho,
                     best_annotators=best_annotators, kept=kept, pair_rhos=tuple(pair_rhos),
                     best_pair_ranks=best_pair_ranks)


# --------------------------------------------------------------------------- model correlation


@dataclass(frozen=True)
class ModelCorrelations:
    """Each model's rho with both annotators of each item's best pair."""

    agreement: Agreement
    models: np.ndarray  # (models,)
    rho_a: np.ndarray  # (models, items), NaN where the model did not score the item
    rho_b: np.ndarray
    scored: np.ndarray  # (models, items) bool
    item_languages: np.ndarray | None

    @property
    def rho(self) -> np.ndarray:
        """Model score per item: the mean of its rho with the two annotators of the best pair."""
        return (self.rho_a + self.rho_b) / 2

    def frame(self) -> pd.DataFrame:
        n_models, n_items = self.rho_a.shape
        columns = {ITEM: np.tile(self.agreement.table.item_ids, n_models), MODEL: np.repeat(self.models, n_items)}
        if self.item_languages is not None:
            columns[LANGUAGE] = np.tile(self.item_languages, n_models)
        columns.update({"rho_a": self.rho_a.ravel(), "rho_b": self.rho_b.ravel(), "rho": self.rho.ravel(),
                        "kept": np.tile(self.agreement.kept, n_models)})
        frame = pd.DataFrame(columns)
        return frame[self.scored.ravel()].reset_index(drop=True)


def _model_score_array(table: RankingTable, model_scores: pd.DataFrame, *, source: str
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate long-format model scores; returns (model names, scores (models, items, max k), languages)."""
    _require_columns(model_scores, MODEL_ID_COLUMNS, source=source)
    has_score, has_rank = SCORE in model_scores.columns, RANK in model_scores.columns
    if has_score == has_rank:
        raise IRRInputError(f"give exactly one of the columns '{SCORE}' (lower is better) or '{RANK}'",
                            source=source, row=HEADER_ROW, field=SCORE)
    value_column = SCORE if has_score else RANK
    if len(model_scores) == 0:
        raise IRRInputError("no model scores (the table has no rows)", source=source)
    _require_present(model_scores, (value_column,), source=source)
    values = model_scores[value_column].to_numpy()
    if not np.issubdtype(values.dtype, np.number) or not np.isfinite(values).all():
        values = _numbers(model_scores, value_column, source=source, integer=False)

    model_codes, models = _codes(model_scores, MODEL, source=source)
    item_codes = table.item_codes_of(model_scores[ITEM])
    if (item_codes < 0).any():
        position = int(np.argmax(item_codes < 0))
        _raise_unknown(model_scores, position, ITEM, f"item {model_scores[ITEM].iloc[position]!r} has no human "
                       "rankings", source=source)
    slots = table.review_slots_of(item_codes, model_scores[REVIEW])
    if (slots < 0).any():
        position = int(np.argmax(slots < 0))
        _raise_unknown(model_scores, position, REVIEW, f"item {model_scores[ITEM].iloc[position]!r} has no review "
                       f"{model_scores[REVIEW].iloc[position]!r} in the rankings", source=source)
    n_models, n_items, max_k = len(models), len(table.item_ids), table.max_reviews
    cell = (model_codes * n_items + item_codes) * max_k + slots
    repeated = _repeats(cell, n_models * n_items * max_k)
    if repeated.any():
        position = int(np.argmax(repeated))
        raise IRRInputError(f"model {model_scores[MODEL].iloc[position]!r} scores review "
                            f"{model_scores[REVIEW].iloc[position]!r} of item {model_scores[ITEM].iloc[position]!r} "
                            "twice", source=source, row=model_scores.index[position], field=REVIEW)
    model_item = model_codes * n_items + item_codes
    counts = np.bincount(model_item, minlength=n_models * n_items)
    short = counts[model_item] != table.review_counts[item_codes]
    if short.any():
        position = int(np.argmax(short))
        k = int(table.review_counts[item_codes[position]])
        raise IRRInputError(f"model {model_scores[MODEL].iloc[position]!r} scores {int(counts[model_item[position]])} "
                            f"of the {k} reviews of item {model_scores[ITEM].iloc[position]!r}; it must score all",
                            source=source, row=model_scores.index[position], field=REVIEW)
    scores = np.full((n_models, n_items, max_k), np.nan)
    scores[model_codes, item_codes, slots] = values
    languages = (_per_item_value(model_scores, LANGUAGE, item_codes, n_items, source=source)
                 if LANGUAGE in model_scores.columns else None)
    return np.asarray(models, dtype=object), scores, languages


def _raise_unknown(frame: pd.DataFrame, position: int, field: str, reason: str, *, source: str) -> None:
    """A value not found in the rankings: say "missing value" when the cell is empty."""
    if pd.isna(frame[field].iloc[position]):
        reason = "missing value"
    raise IRRInputError(reason, source=source, row=frame.index[position], field=field)


def merged_languages(table_languages: np.ndarray | None, model_languages: np.ndarray | None, *,
                     table: RankingTable) -> np.ndarray | None:
    """Item languages from either input; where both give one they must agree."""
    if table_languages is None:
        return model_languages
    if model_languages is None:
        return table_languages
    conflict = np.array([m is not None and t is not None and m != t
                         for t, m in zip(table_languages, model_languages)], dtype=bool)
    if conflict.any():
        item = int(np.argmax(conflict))
        raise IRRInputError(f"item {table.item_ids[item]!r} has language {model_languages[item]!r} in the model "
                            f"scores but {table_languages[item]!r} in the rankings", source=MODEL_SCORES_SOURCE,
                            field=LANGUAGE)
    return np.where(pd.isna(table_languages), model_languages, table_languages).astype(object)


def correlate_score_array(agreement_result: Agreement, models: np.ndarray, scores: np.ndarray,
                          languages: np.ndarray | None) -> ModelCorrelations:
    """Rank each model's scores (lower = better, ties averaged) and correlate with the best pair."""
    table = agreement_result.table
    n_models, n_items = scores.shape[:2]
    rho_a = np.full((n_models, n_items), np.nan)
    rho_b = np.full((n_models, n_items), np.nan)
    scored = ~np.isnan(scores[:, :, 0])
    for k in np.unique(table.review_counts):  # one pass per distinct review count
        items = np.flatnonzero((table.review_counts == k) & agreement_result.evaluable)
        if len(items) == 0:
            continue
        model_ranks = average_ranks(scores[:, items, :k])  # (models, m, k)
        pair_ranks = agreement_result.best_pair_ranks[items, :, :k]  # (m, 2, k)
        rho_a[:, items] = pearson_last_axis(model_ranks, pair_ranks[None, :, 0, :])
        rho_b[:, items] = pearson_last_axis(model_ranks, pair_ranks[None, :, 1, :])
    return ModelCorrelations(agreement=agreement_result, models=models, rho_a=rho_a, rho_b=rho_b, scored=scored,
                             item_languages=languages)


def model_correlations(agreement_result: Agreement, model_scores: pd.DataFrame) -> ModelCorrelations:
    """Per item and model: rho with each annotator of the best pair (tie-aware: Pearson on average ranks).

    ``model_scores`` is long format: item_id, model, review_id and either ``score`` (lower is better,
    e.g. perplexity) or ``rank``; optionally language. A model must score every review of an item it
    scores, and only items that have rankings.
    """
    models, scores, languages = _model_score_array(agreement_result.table, model_scores, source=MODEL_SCORES_SOURCE)
    languages = merged_languages(agreement_result.table.languages, languages, table=agreement_result.table)
    return correlate_score_array(agreement_result, models, scores, languages)


def _language_groups(languages: np.ndarray | None, n_items: int) -> list[tuple[object, np.ndarray]]:
    """(language, item mask) pairs; a single (None, all) group when there are no languages."""
    if languages is None:
        return [(None, np.ones(n_items, dtype=bool))]
    codes, names = pd.factorize(pd.Series(languages, dtype=object), sort=True)
    groups = [(name, codes == code) for code, name in enumerate(names)]
    if (codes < 0).any():
        groups.append((None, codes < 0))
    return groups


def _mean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else math.nan


def model_summary(correlations: ModelCorrelations, *, by_language: bool | None = None) -> pd.DataFrame:
    """Mean model score over kept items it scored, per model (and per language when known)."""
    by_language = correlations.item_languages is not None if by_language is None else by_language
    languages = correlations.item_languages if by_language else None
    kept = correlations.agreement.kept
    rho = correlations.rho
    rows = []
    for m, model in enumerate(correlations.models):
        for language, in_language in _language_groups(languages, len(kept)):
            used = kept & in_language & ~np.isnan(rho[m])
            row = {MODEL: model}
            if by_language:
                row[LANGUAGE] = language
            row.update({"mean_rho": _mean(rho[m, used]), "items": int(used.sum())})
            rows.append(row)
    columns = [MODEL, LANGUAGE, "mean_rho", "items"] if by_language else [MODEL, "mean_rho", "items"]
    return pd.DataFrame(rows, columns=columns)


def human_reference(agreement_result: Agreement, *, languages: np.ndarray | None = None) -> pd.DataFrame:
    """Human-human reference: mean best-pair rho over kept items (paper Table 2, "Human")."""
    languages = agreement_result.table.languages if languages is None else languages
    rows = []
    for language, in_language in _language_groups(languages, len(agreement_result.kept)):
        used = agreement_result.kept & in_language
        row = {LANGUAGE: language} if languages is not None else {}
        row.update({"mean_rho": _mean(agreement_result.best_rho[used]), "items": int(used.sum())})
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- threshold sweep


def threshold_sweep(agreement_result: Agreement, *, correlations: ModelCorrelations | None = None,
                    prompt: ModelCorrelations | None = None, languages: np.ndarray | None = None,
                    by_language: bool = False,
                    thresholds: Iterable[SweepThreshold] = SWEEP_THRESHOLDS) -> pd.DataFrame:
    """Kept items and mean best-pair rho per threshold (paper Table 4 "Human", Figure 4).

    mean_rho is the mean best-pair rho over kept items. With ``correlations``, each model's mean
    score over the same kept items is added as a column (Table 4 "GPT-4V Included": the threshold
    filters on human agreement, and at 0.6 the value equals the model's Table 2 score). With
    ``prompt``, the same for the prompt rank (Figure 3) in ``mean_rho_prompt_rank``.
    """
    languages = agreement_result.table.languages if languages is None else languages
    groups = _language_groups(languages if by_language else None, len(agreement_result.best_rho))
    best = agreement_result.best_rho
    extra = []
    if correlations is not None:
        extra += [(f"mean_rho[{model}]", correlations.rho[m]) for m, model in enumerate(correlations.models)]
    if prompt is not None:
        extra.append((PROMPT_SWEEP_COLUMN, prompt.rho[0]))
    rows = []
    for language, in_language in groups:
        for cut in thresholds:
            if cut.minimum is None:
                kept = in_language.copy()
            else:
                with np.errstate(invalid="ignore"):
                    kept = in_language & (best >= cut.minimum - RHO_TOLERANCE)
            row = {LANGUAGE: language} if by_language else {}
            row.update({"threshold": cut.label, "kept": int(kept.sum()), "mean_rho": _mean(best[kept])})
            for name, values in extra:
                row[name] = _mean(values[kept])
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- prompt rank (Figure 3)


@dataclass(frozen=True)
class PromptRankAnalysis:
    """How human ranks follow the prompt rank (the level each review was generated for)."""

    correlations: ModelCorrelations  # prompt rank treated as one more model ranking
    by_prompt_rank: pd.DataFrame  # per prompt rank: counts of each human rank, mean human rank
    by_prompt_rank_kept: pd.DataFrame  # the same over kept items only
    annotation_rhos: pd.DataFrame  # rho(prompt rank, annotator ranking) per (item, annotator)
    by_annotator: pd.DataFrame  # mean of annotation_rhos per annotator


def _rank_distribution(prompt: np.ndarray, human: np.ndarray, max_k: int) -> pd.DataFrame:
    counts = np.bincount((prompt - 1) * max_k + (human - 1), minlength=max_k * max_k).reshape(max_k, max_k)
    totals = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_rank = counts @ np.arange(1, max_k + 1) / totals
    frame = pd.DataFrame(counts, columns=[f"human_rank_{r}" for r in range(1, max_k + 1)])
    frame.insert(0, PROMPT_RANK, np.arange(1, max_k + 1))
    frame["rankings"] = totals
    frame["mean_human_rank"] = mean_rank
    return frame


def prompt_rank_analysis(agreement_result: Agreement, *, languages: np.ndarray | None = None) -> PromptRankAnalysis:
    """Prompt rank vs human rank: distribution, rho per annotator, and rho with the best pair."""
    table = agreement_result.table
    if table.prompt_ranks is None:
        raise ValueError(f"the rankings have no '{PROMPT_RANK}' column")
    languages = table.languages if languages is None else languages
    correlations = correlate_score_array(agreement_result, np.array([PROMPT_RANK_MODEL], dtype=object),
                                         table.prompt_ranks[None], languages)
    # The distribution counts whole ranks, so rows of an annotator allowed ties stay out of it.
    rows = table.row_tie_free
    item_codes = table.row_items[rows]
    prompt = table.prompt_ranks[item_codes, table.row_slots[rows]].astype(np.int64)
    human = table.row_ranks[rows].astype(np.int64)
    max_k = table.max_reviews
    kept_rows = agreement_result.kept[item_codes]
    everything = _rank_distribution(prompt, human, max_k)
    kept_only = _rank_distribution(prompt[kept_rows], human[kept_rows], max_k)

    frames = []
    for block in table.blocks:
        k = block.ranks.shape[2]
        prompt_block = table.prompt_ranks[block.items, :k][:, None, :]
        rhos = spearman_tie_free(block.ranks, prompt_block)
        rhos = np.where(block.tie_free, rhos, pearson_last_axis(block.ranks, prompt_block))
        frames.append(pd.DataFrame({
            ITEM: np.repeat(table.item_ids[block.items], block.ranks.shape[1]),
            ANNOTATOR: table.annotator_ids[block.annotators.ravel()],
            "rho": rhos.ravel(), "kept": np.repeat(agreement_result.kept[block.items], block.ranks.shape[1])}))
    annotation_rhos = pd.concat(frames, ignore_index=True)
    by_annotator = (annotation_rhos.groupby(ANNOTATOR, sort=True)["rho"].agg(["mean", "size"])
                    .rename(columns={"mean": "mean_rho", "size": "items"}).reset_index())
    return PromptRankAnalysis(correlations=correlations, by_prompt_rank=everything, by_prompt_rank_kept=kept_only,
                              annotation_rhos=annotation_rhos, by_annotator=by_annotator)


# --------------------------------------------------------------------------- model as an extra annotator


def model_annotator_id(model: object, existing: Iterable[object]) -> str:
    """An annotator id for a model that no human annotator already uses."""
    taken = {str(a) for a in existing}
    candidate = f"model:{model}"
    while candidate in taken:
        candidate = f"{candidate}'"
    return candidate


def with_model_as_annotator(rankings: pd.DataFrame, model_scores: pd.DataFrame, *, model: object
                            ) -> tuple[pd.DataFrame, str]:
    """Rankings plus one model's ranking (ascending score, ties averaged) as one more annotator.

    Returns the extended rankings and the annotator id given to the model. Items the model did not
    score keep their human annotators only.
    """
    value_column = SCORE if SCORE in model_scores.columns else RANK
    rows = model_scores[model_scores[MODEL] == model]
    if rows.empty:
        raise ValueError(f"no scores for model {model!r}")
    annotator = model_annotator_id(model, rankings[ANNOTATOR].unique())
    model_rows = pd.DataFrame({
        ITEM: rows[ITEM].to_numpy(), ANNOTATOR: annotator, REVIEW: rows[REVIEW].to_numpy(),
        RANK: pd.to_numeric(rows[value_column]).groupby(rows[ITEM].to_numpy()).rank(method="average").to_numpy()})
    for column in (LANGUAGE, PROMPT_RANK):
        if column in rankings.columns:
            # Copy the item's language and the review's prompt rank from the human rows.
            lookup = rankings.drop_duplicates([ITEM, REVIEW]).set_index([ITEM, REVIEW])[column]
            model_rows[column] = lookup.reindex(pd.MultiIndex.from_arrays([model_rows[ITEM], model_rows[REVIEW]])
                                                ).to_numpy()
    human_rows = rankings.copy()
    human_rows[RANK] = pd.to_numeric(human_rows[RANK]).astype(float)
    return pd.concat([human_rows, model_rows], ignore_index=True), annotator


def extra_annotator_agreement(rankings: pd.DataFrame, model_scores: pd.DataFrame, *, model: object,
                              threshold: float = DEFAULT_THRESHOLD) -> tuple[Agreement, str]:
    """Agreement recomputed with the model's ranking counted as one more annotator."""
    extended, annotator = with_model_as_annotator(rankings, model_scores, model=model)
    return agreement(extended, threshold=threshold, tied_annotators=(annotator,)), annotator


# --------------------------------------------------------------------------- the whole report


@dataclass(frozen=True)
class IRRReport:
    """All results for one data set; ``report_json`` and ``report_tables`` serialise it."""

    agreement: Agreement
    languages: np.ndarray | None
    sweep: pd.DataFrame
    sweep_by_language: pd.DataFrame | None
    human_reference: pd.DataFrame
    correlations: ModelCorrelations | None
    models: pd.DataFrame | None
    prompt: PromptRankAnalysis | None
    extra_annotator: dict[str, tuple[str, pd.DataFrame, pd.DataFrame | None]]  # model -> (id, sweep, by language)


def irr_report(rankings: pd.DataFrame, model_scores: pd.DataFrame | None = None, *,
               threshold: float = DEFAULT_THRESHOLD) -> IRRReport:
    """Everything the paper reports for one data set: agreement, sweep, models, prompt rank."""
    result = agreement(rankings, threshold=threshold)
    correlations = model_correlations(result, model_scores) if model_scores is not None else None
    languages = correlations.item_languages if correlations is not None else result.table.languages
    prompt = (prompt_rank_analysis(result, languages=languages) if result.table.prompt_ranks is not None else None)

    def sweeps(outcome: Agreement, models: ModelCorrelations | None, prompt_rank: PromptRankAnalysis | None):
        overall = threshold_sweep(outcome, correlations=models, languages=languages,
                                  prompt=prompt_rank.correlations if prompt_rank else None)
        per_language = (threshold_sweep(outcome, correlations=models, languages=languages, by_language=True,
                                        prompt=prompt_rank.correlations if prompt_rank else None)
                        if languages is not None else None)
        return overall, per_language

    sweep, sweep_by_language = sweeps(result, correlations, prompt)
    extra = {}
    if correlations is not None:
        for model in correlations.models:
            outcome, annotator = extra_annotator_agreement(rankings, model_scores, model=model, threshold=threshold)
            extra[model] = (annotator, *sweeps(outcome, None, None))
    return IRRReport(
        agreement=result, languages=languages, sweep=sweep, sweep_by_language=sweep_by_language,
        human_reference=human_reference(result, languages=languages), correlations=correlations,
        models=model_summary(correlations) if correlations is not None else None, prompt=prompt,
        extra_annotator=extra)


def _json_number(value: object) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _json_scalar(value: object) -> object:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _sweep_records(frame: pd.DataFrame) -> list[dict]:
    by_label = {cut.label: cut for cut in SWEEP_THRESHOLDS}
    records = []
    for row in frame.to_dict("records"):
        record = {}
        if LANGUAGE in row:
            record[LANGUAGE] = _json_scalar(row[LANGUAGE])
        label = row["threshold"]
        record.update({"threshold": by_label[label].json_value, "label": label, "kept": int(row["kept"]),
                       "mean_rho": _json_number(row["mean_rho"])})
        model_means = {name[len("mean_rho["):-1]: _json_number(v) for name, v in row.items()
                       if name.startswith("mean_rho[")}
        if model_means:
            record["models"] = model_means
        if PROMPT_SWEEP_COLUMN in row:
            record["prompt_rank_rho"] = _json_number(row[PROMPT_SWEEP_COLUMN])
        records.append(record)
    return records


def report_json(report: IRRReport) -> dict:
    """The report as JSON-ready data (NaN becomes None)."""
    agreement_result = report.agreement
    items = []
    for position, row in enumerate(agreement_result.items_frame().to_dict("records")):
        record = {"item_id": _json_scalar(row[ITEM])}
        if report.languages is not None:
            record[LANGUAGE] = _json_scalar(report.languages[position])
        pair = [_json_scalar(row["annotator_a"]), _json_scalar(row["annotator_b"])]
        record.update({
            "best_pair": pair if row["evaluable"] else None,
            "best_rho": _json_number(row["best_rho"]), "kept": bool(row["kept"]), "evaluable": bool(row["evaluable"]),
            "annotators": int(row["annotators"]), "reviews": int(row["reviews"])})
        items.append(record)
    data = {
        "threshold": agreement_result.threshold,
        "summary": {"items": len(items), "evaluable": int(agreement_result.evaluable.sum()),
                    "kept": int(agreement_result.kept.sum())},
        "items": items,
        "sweep": _sweep_records(report.sweep),
        "models": [],
        "human_reference": [{k: (_json_number(v) if k == "mean_rho" else _json_scalar(v)) for k, v in row.items()}
                            for row in report.human_reference.to_dict("records")],
    }
    if report.sweep_by_language is not None:
        data["sweep_by_language"] = _sweep_records(report.sweep_by_language)
    if report.models is not None:
        data["models"] = [{k: (_json_number(v) if k == "mean_rho" else _json_scalar(v)) for k, v in row.items()}
                          for row in report.models.to_dict("records")]
    if report.prompt is not None:
        data["prompt_rank"] = {
            "by_prompt_rank": _distribution_records(report.prompt.by_prompt_rank),
            "by_prompt_rank_kept": _distribution_records(report.prompt.by_prompt_rank_kept),
            "annotators": [{"annotator_id": _json_scalar(r[ANNOTATOR]), "mean_rho": _json_number(r["mean_rho"]),
                            "items": int(r["items"])} for r in report.prompt.by_annotator.to_dict("records")],
        }
    if report.extra_annotator:
        data["extra_annotator"] = []
        for model, (annotator, sweep, sweep_by_language) in report.extra_annotator.items():
            entry = {"model": _json_scalar(model), "annotator_id": annotator, "sweep": _sweep_records(sweep)}
            if sweep_by_language is not None:
                entry["sweep_by_language"] = _sweep_records(sweep_by_language)
            data["extra_annotator"].append(entry)
    return data


def _distribution_records(frame: pd.DataFrame) -> list[dict]:
    records = []
    for row in frame.to_dict("records"):
        counts = {name[len("human_rank_"):]: int(v) for name, v in row.items() if name.startswith("human_rank_")}
        records.append({PROMPT_RANK: int(row[PROMPT_RANK]), "rankings": int(row["rankings"]),
                        "mean_human_rank": _json_number(row["mean_human_rank"]), "human_rank_counts": counts})
    return records


def report_tables(report: IRRReport) -> dict[str, pd.DataFrame]:
    """The report as flat tables, one CSV each."""
    tables = {
        "items": report.agreement.items_frame(),
        "pairs": report.agreement.pairs_frame(),
        "sweep": report.sweep,
        "human_reference": report.human_reference,
    }
    if report.languages is not None and report.agreement.table.languages is None:
        tables["items"].insert(1, LANGUAGE, report.languages)
    if report.sweep_by_language is not None:
        tables["sweep_by_language"] = report.sweep_by_language
    if report.correlations is not None:
        tables["models"] = report.models
        tables["model_items"] = report.correlations.frame()
    if report.prompt is not None:
        tables["prompt_rank"] = report.prompt.by_prompt_rank
        tables["prompt_rank_kept"] = report.prompt.by_prompt_rank_kept
        tables["prompt_rank_annotations"] = report.prompt.annotation_rhos
        tables["prompt_rank_annotators"] = report.prompt.by_annotator
    if report.extra_annotator:
        frames = []
        for model, (annotator, sweep, sweep_by_language) in report.extra_annotator.items():
            frame = (sweep_by_language if sweep_by_language is not None else sweep).copy()
            frame.insert(0, "annotator_id", annotator)
            frame.insert(0, MODEL, model)
            frames.append(frame)
        tables["extra_annotator_sweep"] = pd.concat(frames, ignore_index=True)
    return tables


# --------------------------------------------------------------------------- CSV readers


def _read_csv(path: Path, *, source: str) -> pd.DataFrame:
    """All cells as text, data rows indexed from 1 so error rows match the file's data rows."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except OSError as error:
        raise IRRInputError(f"cannot read the file ({error.strerror or error})", source=source) from None
    except pd.errors.EmptyDataError:
        raise IRRInputError("the file is empty", source=source) from None
    except UnicodeDecodeError as error:
        raise IRRInputError(f"not UTF-8 text ({error.reason} at byte {error.start})", source=source) from None
    except pd.errors.ParserError as error:
        raise IRRInputError(f"not a readable CSV file ({error})", source=source) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise IRRInputError("the file has a header but no data rows", source=source)
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    return frame


def _require_text(frame: pd.DataFrame, columns: Iterable[str], *, source: str) -> None:
    for column in columns:
        empty = (frame[column].str.strip() == "").to_numpy()
        if empty.any():
            raise IRRInputError("empty value", source=source, row=frame.index[int(np.argmax(empty))], field=column)


def _blank_to_none(frame: pd.DataFrame, column: str) -> None:
    """An empty optional cell (e.g. language) means unknown, not the value ''."""
    if column in frame.columns:
        text = frame[column].str.strip()
        frame[column] = text.where(text != "", None)


def _integer_column(frame: pd.DataFrame, column: str, *, source: str) -> pd.Series:
    text = frame[column].str.strip()
    bad = ~text.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool)
    if bad.any():
        position = int(np.argmax(bad))
        raise IRRInputError(f"{frame[column].iloc[position]!r} is not an integer", source=source,
                            row=frame.index[position], field=column)
    return text.astype(np.int64)


def read_rankings_csv(path: str | Path, *, source: str | None = None) -> pd.DataFrame:
    """Read long-format rankings (UTF-8): item_id, annotator_id, review_id, rank [, language, prompt_rank]."""
    source = source or RANKINGS_SOURCE
    frame = _read_csv(Path(path), source=source)
    _require_columns(frame, RANKING_COLUMNS, source=source)
    _require_text(frame, (ITEM, ANNOTATOR, REVIEW), source=source)
    frame[RANK] = _integer_column(frame, RANK, source=source)
    _blank_to_none(frame, LANGUAGE)
    if PROMPT_RANK in frame.columns:
        frame[PROMPT_RANK] = _integer_column(frame, PROMPT_RANK, source=source)
    return frame


def read_model_scores_csv(path: str | Path, *, source: str | None = None) -> pd.DataFrame:
    """Read long-format model scores (UTF-8): item_id, model, review_id, score or rank [, language]."""
    source = source or MODEL_SCORES_SOURCE
    frame = _read_csv(Path(path), source=source)
    _require_columns(frame, MODEL_ID_COLUMNS, source=source)
    _require_text(frame, MODEL_ID_COLUMNS, source=source)
    _blank_to_none(frame, LANGUAGE)
    for column in (SCORE, RANK):
        if column in frame.columns:
            text = frame[column].str.strip()
            values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
            bad = ~np.isfinite(values)
            if bad.any():
                position = int(np.argmax(bad))
                raise IRRInputError(f"{frame[column].iloc[position]!r} is not a finite number", source=source,
                                    row=frame.index[position], field=column)
            frame[column] = values
    return frame


# --------------------------------------------------------------------------- plot


def plot_sweep(report: IRRReport, path: str | Path | None = None) -> Figure:
    """Figure 4 of the paper, per language: kept items (bars) and mean rho (lines) per threshold.

    Lines: the best-pair rho of the kept items, each model's score over them (Table 4's "Included"
    rows) and the prompt rank's (Figure 3) when known. Written as PNG when ``path`` is given.
    """
    # Imported here so that the numerical core does not load matplotlib.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    frame = report.sweep_by_language if report.sweep_by_language is not None else report.sweep
    groups = (list(frame.groupby(LANGUAGE, sort=False, dropna=False)) if LANGUAGE in frame.columns
              else [(None, frame)])
    figure = Figure(figsize=(6.5, 3.6 * len(groups)), layout="constrained")
    FigureCanvasAgg(figure)
    axes_list = figure.subplots(len(groups), 1, squeeze=False)[:, 0]
    for axes, (language, group) in zip(axes_list, groups):
        positions = np.arange(len(group))
        axes.bar(positions, group["kept"], color="#c9d6e8", label="kept items")
        axes.set_xticks(positions, group["threshold"])
        axes.set_xlabel("threshold on the best-pair rho")
        axes.set_ylabel("kept items")
        rho_axes = axes.twinx()
        rho_axes.plot(positions, group["mean_rho"], marker="o", color="black", label="human best pair")
        for column in group.columns:
            if column.startswith("mean_rho["):
                rho_axes.plot(positions, group[column], marker=".", label=column[len("mean_rho["):-1])
        if PROMPT_SWEEP_COLUMN in group.columns:
            rho_axes.plot(positions, group[PROMPT_SWEEP_COLUMN], marker=".", linestyle="--", label=PROMPT_RANK_MODEL)
        rho_axes.set_ylim(-1, 1)
        rho_axes.set_ylabel("mean Spearman rho")
        rho_axes.legend(loc="lower left", fontsize="small")
        axes.set_title("IRR threshold sweep" + (f" ({language})" if language is not None else ""))
    if path is not None:
        figure.savefig(path, format="png", dpi=120)
    return figure
