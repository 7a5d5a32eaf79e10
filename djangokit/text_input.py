"""The one cleaning of a text field that people type (worker answers, form fields).

Uses ``kernel.input_checks`` for what is refused and raises Django's ``ValidationError`` with
a message that names the field, in the active language where a translation exists.
"""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from kernel.input_checks import is_blank, text_problem


def clean_text(value: Any, *, label: str, max_length: int = 5000, required: bool = True,
               multiline: bool = True) -> str:
    """``value`` stripped; refused when not text, with forbidden characters, blank or too long.

    Blank includes text made only of invisible characters (zero-width spaces and the like), which
    reads as empty to everyone who sees it.
    """
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValidationError(_("%(field)s must be text.") % {"field": label})
    problem = text_problem(value, multiline=multiline)
    if problem:
        raise ValidationError(_("%(field)s %(problem)s.") % {"field": label, "problem": problem})
    value = value.strip()
    if is_blank(value):
        if required:
            raise ValidationError(_("%(field)s is empty.") % {"field": label})
        return ""
    if len(value) > max_length:
        raise ValidationError(
            _("%(field)s is longer than %(limit)d characters.") % {"field": label, "limit": max_length}
        )
    return value
