"""The language a worker reads a round in (#27).

A round's content (its items: instructions, reviews, model outputs, the study information) is in the
round's language. What crowdbench itself says around it (page chrome, task-type instructions,
refusals, errors, feedback) follows the worker: the round's language when they listed it among the
languages they work in, or when they listed none (a provider's worker before any screening);
otherwise the first language they listed. An English-only worker refused by a Japanese round reads
why in English. A worker who chose a language for crowdbench's pages on their settings page reads
every page in it (``Worker.page_language``), rounds or not.
"""
from __future__ import annotations

from django.conf import settings
from django.utils import translation


def worker_language(*, worker, round) -> str:
    """The language code of crowdbench's text for ``worker`` on ``round``: the one they chose for
    crowdbench's pages, if they chose one."""
    spoken = {code for code, _name in settings.LANGUAGES}
    chosen = getattr(worker, "page_language", "")
    if chosen in spoken:
        return chosen
    listed = [code for code in (worker.languages or []) if code in spoken]
    if not listed or round.language in listed:
        return round.language
    return listed[0]


def speaking_to(*, worker, round) -> translation.override:
    """``translation.override`` to the worker's language on ``round``."""
    return translation.override(worker_language(worker=worker, round=round))
