"""Guardrails against machine-written answers in free-text tasks (instructions, captions).

The page records paste events and typing time (``static/annotation/work.js`` sends them as the
``typing`` field); the engine stores them on the assignment and flags texts that nearly repeat
another worker's text for the same item or an LLM output for it. Flags go to the review queue;
nothing is rejected automatically.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from kernel.input_checks import HostileInput, parse_json

# Texts at least this similar (difflib's ratio on lower-cased, whitespace-collapsed text) are near-duplicates.
NEAR_DUPLICATE_RATIO = 0.9
# Shorter texts ("a red car") repeat by chance and are not compared.
MIN_COMPARED_CHARS = 25
# Share of the written text that came from pastes above which the answer is flagged.
PASTED_SHARE = 0.5
STAT_LIMITS = {"pastes": 10_000, "pasted_chars": 1_000_000, "typing_seconds": 86_400}


def clean_input_stats(value: Any) -> dict | None:
    """The page's record ({"pastes", "pasted_chars", "typing_seconds"}), a JSON object or its text;
    None when the page sent none. Refused (field ``typing``) when malformed."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except HostileInput:
            raise ValidationError({"typing": [_("The typing record is not valid JSON.")]}) from None
    if not isinstance(value, dict) or set(value) - set(STAT_LIMITS):
        raise ValidationError({"typing": [_("The typing record takes only %(keys)s.")
                                          % {"keys": ", ".join(STAT_LIMITS)}]})
    cleaned = {}
    for key, limit in STAT_LIMITS.items():
        number = value.get(key, 0)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number <= limit:
            raise ValidationError({"typing": [_("%(key)s must be a number from 0 to %(limit)d.")
                                              % {"key": key, "limit": limit}]})
        cleaned[key] = round(float(number), 1) if key == "typing_seconds" else int(number)
    return cleaned


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, _normal(a), _normal(b), autojunk=False).ratio()


def flags_for(*, assignment, handler, others) -> list[dict]:
    """Flags of a new submission: near-duplicates of ``others`` (other workers' submissions on the
    same item), of the LLM outputs for the item, and mostly pasted text."""
    texts = [text for text in handler.written_texts(assignment) if len(_normal(text)) >= MIN_COMPARED_CHARS]
    flags = []
    if texts:
        for other in others:
            best = max((similarity(text, theirs) for text in texts for theirs in handler.written_texts(other)),
                       default=0.0)
            if best >= NEAR_DUPLICATE_RATIO:
                flags.append({"kind": "near_duplicate", "of": "worker", "assignment": other.pk,
                              "similarity": round(best, 3)})
        for source, machine in handler.machine_texts(assignment.item):
            best = max(similarity(text, machine) for text in texts)
            if best >= NEAR_DUPLICATE_RATIO:
                flags.append({"kind": "near_duplicate", "of": "llm", "source": source, "similarity": round(best, 3)})
    stats = assignment.input_stats or {}
    written = sum(len(text) for text in handler.written_texts(assignment))
    if written and stats.get("pasted_chars", 0) >= PASTED_SHARE * written:
        flags.append({"kind": "pasted", "pasted_chars": stats["pasted_chars"], "written_chars": written})
    return flags
