"""``reverse`` for the URLs of one row, the reversing done once per URL name.

Every "next task" answer carries four URLs of its assignment; Django's ``reverse`` matches the URL
pattern again on each call (about 36 µs each on the machine the load bench runs on). Here a URL
name is reversed once, with a probe id, and later ids are put in its place.
"""
from __future__ import annotations

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse

# No URL of the project contains these digits but where the id goes (checked on each new name).
_PROBE = 918273645
_templates: dict[tuple, tuple[str, str]] = {}


def reverse_with_id(viewname: str, pk: int) -> str:
    """``reverse(viewname, args=[pk])`` for a URL whose one argument is an integer id."""
    key = (viewname, get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)
    template = _templates.get(key)
    if template is None:
        probe = reverse(viewname, args=[_PROBE])
        before, found, after = probe.partition(str(_PROBE))
        if not found or str(_PROBE) in after:
            return reverse(viewname, args=[pk])
        template = _templates.setdefault(key, (before, after))
    return f"{template[0]}{int(pk)}{template[1]}"
