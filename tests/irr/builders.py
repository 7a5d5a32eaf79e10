"""Small builders for long-format IRR inputs used across the IRR tests."""
from __future__ import annotations

import pandas as pd

IDENTITY_5 = [1, 2, 3, 4, 5]


def rankings_frame(items: dict, *, reviews: dict | None = None, languages: dict | None = None,
                   prompt_ranks: dict | None = None) -> pd.DataFrame:
    """``items`` maps item id -> {annotator id: ranks in review order}.

    Review ids default to r1..rk; ``reviews`` may give them per item. ``prompt_ranks`` maps item id
    -> prompt rank of each review in the same order.
    """
    rows = []
    for item, by_annotator in items.items():
        for annotator, ranks in by_annotator.items():
            review_ids = reviews[item] if reviews and item in reviews else [f"r{j}" for j in range(1, len(ranks) + 1)]
            for position, (review, rank) in enumerate(zip(review_ids, ranks)):
                row = {"item_id": item, "annotator_id": annotator, "review_id": review, "rank": rank}
                if languages is not None:
                    row["language"] = languages[item]
                if prompt_ranks is not None:
                    row["prompt_rank"] = prompt_ranks[item][position]
                rows.append(row)
    return pd.DataFrame(rows)


def scores_frame(items: dict, *, value: str = "score", reviews: dict | None = None,
                 languages: dict | None = None) -> pd.DataFrame:
    """``items`` maps item id -> {model: scores in review order}."""
    rows = []
    for item, by_model in items.items():
        for model, scores in by_model.items():
            review_ids = reviews[item] if reviews and item in reviews else [f"r{j}" for j in range(1, len(scores) + 1)]
            for review, score in zip(review_ids, scores):
                row = {"item_id": item, "model": model, "review_id": review, value: score}
                if languages is not None:
                    row["language"] = languages[item]
                rows.append(row)
    return pd.DataFrame(rows)
