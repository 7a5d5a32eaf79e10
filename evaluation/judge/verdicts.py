"""Verdicts of the pairwise judge, without Django: parsing, the two-query rule, position bias.

Query 1 shows model_a as Response A; query 2 shows model_b as Response A. A query's verdict is
the model it prefers ("model_a" / "model_b") or None when it named neither.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# The phrase every judge prompt asks the answer to end with.
VERDICT_PHRASE = re.compile(r"overall\s*,?\s*response\s*\(?\s*([ab])\s*\)?\s*is\s+(?:the\s+)?better", re.IGNORECASE)
# What the extraction prompt asks the second model to answer: one letter, or that there is none.
EXTRACTED = re.compile(r"^\W*(?:response\s+)?([ab]|none|tie)\W*$", re.IGNORECASE)

MODEL_A, MODEL_B, TIE = "model_a", "model_b", "tie"


def parse_verdict(text: str) -> str | None:
    """"A" or "B" from the judge's fixed closing phrase; None when the phrase is missing, or
    ambiguous (the answer states it for both responses): those go to the extraction model."""
    letters = {match.group(1).upper() for match in VERDICT_PHRASE.finditer(text or "")}
    return letters.pop() if len(letters) == 1 else None


def parse_extracted(text: str) -> str | None:
    """The extraction model's answer: "A", "B", or None for "none"/"tie"/anything else."""
    match = EXTRACTED.match((text or "").strip())
    if not match:
        return None
    letter = match.group(1).upper()
    return letter if letter in ("A", "B") else None


def verdict_for(position: str | None, query: int) -> str | None:
    """The model a position names: in query 1 A is model_a, in query 2 A is model_b."""
    if position is None:
        return None
    if query not in (1, 2) or position not in ("A", "B"):
        raise ValueError(f"query must be 1 or 2 and position A or B, got {query!r}, {position!r}")
    shown_first = MODEL_A if query == 1 else MODEL_B
    return shown_first if position == "A" else (MODEL_B if shown_first == MODEL_A else MODEL_A)


def battle_winner(verdicts: Sequence[str | None]) -> str:
    """The side that won more of the queries; equal (including none decided) is a tie."""
    a_wins = sum(verdict == MODEL_A for verdict in verdicts)
    b_wins = sum(verdict == MODEL_B for verdict in verdicts)
    if a_wins > b_wins:
        return MODEL_A
    if b_wins > a_wins:
        return MODEL_B
    return TIE


def position_bias(pairs: Iterable[tuple[str | None, str | None]]) -> dict:
    """How often the verdict follows the position rather than the response.

    ``pairs`` are (verdict of query 1, verdict of query 2) per battle. A battle whose two queries
    pick the same position (A then A, or B then B) picked different models: the position decided.
    """
    battles = both_decided = consistent = same_position = first_shown = decided_queries = 0
    for first, second in pairs:
        battles += 1
        for query, verdict in ((1, first), (2, second)):
            if verdict is not None:
                decided_queries += 1
                first_shown += verdict == verdict_for("A", query)
        if first is None or second is None:
            continue
        both_decided += 1
        if first == second:
            consistent += 1
        else:
            same_position += 1
    return {
        "battles": battles,
        "both_queries_decided": both_decided,
        "consistent": consistent,
        "followed_position": same_position,
        "followed_position_rate": same_position / both_decided if both_decided else None,
        "decided_queries": decided_queries,
        "response_a_chosen_rate": first_shown / decided_queries if decided_queries else None,
    }
