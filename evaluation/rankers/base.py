"""What every IRR model ranker shares: the item it reads and the score table it returns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

import pandas as pd

SCORE_COLUMNS = ["item_id", "model", "language", "review_id", "score"]

# The fixed prefix instruction before each review when measuring perplexity (IRR §3). Versioned
# so reports can say which wording produced a number.
PERPLEXITY_PREFIX_VERSION = 1
PERPLEXITY_PREFIXES = {
    "en": "The following text is a review written about an image.\nReview: ",
    "ja": "次の文章は、ある画像について書かれたレビューです。\nレビュー：",
}


class PerplexityPrefixes:
    """For the perplexity rankers: ``self.prefixes`` maps a language to its fixed prefix."""

    prefixes: dict[str, str]

    def prefix_for(self, language: str) -> str:
        try:
            return self.prefixes[language]
        except KeyError:
            raise ValueError(f"no perplexity prefix for language {language!r}") from None


@dataclass(frozen=True)
class ReviewItem:
    """One IRR item as a ranker sees it: its reviews in a fixed order, and the image."""

    item_id: str
    language: str
    reviews: Sequence[tuple[str, str]]  # (review_id, text)
    image_url: str | None = None
    category: str = ""


@dataclass(frozen=True)
class Unscored:
    """An item a ranker could not score (a failed call, an unreadable answer); it is left out."""

    item_id: str
    reason: str


class ReviewRanker(Protocol):
    model_name: str
    kind: str

    def score_items(self, items: Sequence[ReviewItem]) -> pd.DataFrame:
        """Scores with :data:`SCORE_COLUMNS`; lower score = better review.

        An item is scored for all of its reviews or not at all. Rankers that can fail on single items
        list those in an ``unscored`` attribute (a list of :class:`Unscored`) instead of raising.
        """


def scores_frame(model_name: str, rows: Iterable[tuple[str, str, str, float]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=["item_id", "language", "review_id", "score"])
    frame.insert(1, "model", model_name)
    return frame[SCORE_COLUMNS]
