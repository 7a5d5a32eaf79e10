"""Small display filters of the cockpit pages."""
from __future__ import annotations

from django import template

register = template.Library()

# Words of stored keys that are written in capitals: "irr_items" → "IRR items".
ACRONYMS = {"irr": "IRR", "llm": "LLM", "json": "JSON", "csv": "CSV", "id": "ID", "ids": "IDs", "url": "URL"}


@register.filter
def readable(key) -> str:
    """A stored key as a person reads it: ``instances_left_out`` → "Instances left out"."""
    words = [ACRONYMS.get(word, word) for word in str(key).replace("_", " ").split()]
    text = " ".join(words)
    return text[:1].upper() + text[1:]
