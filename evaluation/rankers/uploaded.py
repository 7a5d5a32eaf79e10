"""Scores or ranks computed elsewhere, uploaded as CSV and checked against the items.

Columns: ``item_id, model, review_id`` and ``score`` (lower is better) or ``rank`` (1 = best);
other columns (``language``, ...) are ignored. Ids must be those of the items being scored (for
items read from the database: the review set id and the review id). Every (item, model) in the
file gives a value for each review of the item, once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from stats.irr import IRRInputError, read_model_scores_csv

from .base import SCORE_COLUMNS, ReviewItem, Unscored


class UploadedScoresError(ValueError):
    """A problem in the uploaded file, located by file, row and field."""


class UploadedScoresRanker:
    kind = "uploaded"
    prompt_version = ""
    uses_llm = False
    needs_scores_file = True

    @classmethod
    def from_options(cls, options) -> UploadedScoresRanker:
        if options.scores_path is None:
            raise ValueError("the uploaded ranker needs a scores file")
        return cls(options.scores_path, model_name=options.model)

    def __init__(self, path: str | Path, *, model_name: str | None = None):
        self.path = Path(path)
        self.model_name = model_name or ""  # only this model's rows when given
        self.unscored: list[Unscored] = []

    def _error(self, message: str, *, row: object = None, field: str | None = None) -> UploadedScoresError:
        where = [str(self.path)]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        return UploadedScoresError(", ".join(where) + ": " + message)

    def read(self) -> pd.DataFrame:
        try:
            frame = read_model_scores_csv(self.path, source=str(self.path))
        except IRRInputError as error:
            raise UploadedScoresError(str(error)) from None
        for column in ("item_id", "model", "review_id"):
            frame[column] = frame[column].str.strip()
        if "score" in frame.columns and "rank" in frame.columns:
            raise self._error("give either a 'score' or a 'rank' column, not both", row="header", field="rank")
        value_column = "score" if "score" in frame.columns else "rank" if "rank" in frame.columns else None
        if value_column is None:
            raise self._error("missing column 'score' (or 'rank')", row="header", field="score")
        frame = frame.rename(columns={value_column: "score"})
        if self.model_name:
            frame = frame[frame["model"] == self.model_name]
            if frame.empty:
                raise self._error(f"no rows for model {self.model_name!r}", field="model")
        return frame

    def score_items(self, items: Sequence[ReviewItem]) -> pd.DataFrame:
        frame = self.read()
        by_id = {str(item.item_id): item for item in items}
        language = frame["item_id"].map(lambda item_id: by_id[item_id].language if item_id in by_id else None)
        unknown_item = language.isna().to_numpy()
        if unknown_item.any():
            row = frame.index[int(np.argmax(unknown_item))]
            raise self._error(f"unknown item {frame.at[row, 'item_id']!r}", row=row, field="item_id")
        for row, item_id, review_id in frame[["item_id", "review_id"]].itertuples(name=None):
            if review_id not in {str(r) for r, _ in by_id[item_id].reviews}:
                raise self._error(f"item {item_id!r} has no review {review_id!r}", row=row, field="review_id")
        repeated = frame.duplicated(["item_id", "model", "review_id"]).to_numpy()
        if repeated.any():
            row = frame.index[int(np.argmax(repeated))]
            raise self._error(
                f"review {frame.at[row, 'review_id']!r} of item {frame.at[row, 'item_id']!r} is scored twice "
                f"for model {frame.at[row, 'model']!r}", row=row, field="review_id")
        counts = frame.groupby(["item_id", "model"], sort=False)["review_id"].transform("size")
        expected = frame["item_id"].map(lambda item_id: len(by_id[item_id].reviews))
        short = (counts != expected).to_numpy()
        if short.any():
            row = frame.index[int(np.argmax(short))]
            item_id = frame.at[row, "item_id"]
            raise self._error(
                f"model {frame.at[row, 'model']!r} scores {counts[row]} of the {expected[row]} reviews of item "
                f"{item_id!r}; give all of them", row=row, field="review_id")
        result = frame.assign(language=language)[SCORE_COLUMNS].reset_index(drop=True)
        result["score"] = result["score"].astype(float)
        scored = set(result["item_id"])
        self.unscored = [Unscored(item_id, "not in the uploaded file") for item_id in by_id if item_id not in scored]
        return result
