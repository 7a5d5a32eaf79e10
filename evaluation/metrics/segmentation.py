"""Word segmentation shared by the metrics: lower-cased words for space-separated languages,
MeCab morphemes (IPAdic) for Japanese, which has no spaces between words."""
from __future__ import annotations

import re
from functools import lru_cache

from .base import MetricUnavailable

# Letters, digits and apostrophes inside words; punctuation is dropped (as COCO's tokenizer does).
_WORD = re.compile(r"\w+(?:'\w+)*")
_JAPANESE_PUNCTUATION = re.compile(r"^[\W_]+$")


@lru_cache(maxsize=1)
def _mecab_tagger():
    try:
        import ipadic
        import MeCab
    except ImportError as error:
        raise MetricUnavailable(
            f"Japanese text needs MeCab with IPAdic ({error.name} is missing): "
            "pip install -r requirements-metrics.txt"
        ) from None
    return MeCab.Tagger(f"{ipadic.MECAB_ARGS} -Owakati")


def mecab_segments(text: str) -> list[str]:
    """MeCab's segmentation of ``text`` (every morpheme, punctuation included)."""
    return _mecab_tagger().parse(text).split()


def words(text: str, language: str) -> list[str]:
    """The words of ``text`` without punctuation: MeCab morphemes for Japanese, else lower-cased words."""
    if language == "ja":
        return [token.lower() for token in mecab_segments(text) if not _JAPANESE_PUNCTUATION.match(token)]
    return _WORD.findall(text.lower())
