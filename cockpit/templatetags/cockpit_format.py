"""Small display filters of the cockpit pages."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def readable(key) -> str:
    """A stored key as a person reads it: ``instances_left_out`` → "Instances left out"."""
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:]
