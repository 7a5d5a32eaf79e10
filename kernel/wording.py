"""Counts in English sentences: "1 instance", "3 instances" (reports and summaries a researcher reads)."""
from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number ``n`` needs; ``plural`` defaults to ``singular`` + "s"."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"
