"""A round's qualification rules in words, for the people who read them (the cockpit's round page
and the eligibility-widening form), instead of the stored ``"language_matched: True"``."""
from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from datasets_app.models import Language


def _share(value) -> str:
    return f"{float(value) * 100:g} %"


def describe_rule(rule: str, value, *, language: str | None = None) -> str:
    """One rule and its value as a sentence fragment; ``language`` is the round's language code."""
    if rule == "min_approved_tasks":
        return ngettext("at least %(n)d approved task in earlier rounds", "at least %(n)d approved tasks in earlier rounds",
                        value) % {"n": value}
    if rule == "max_tasks_per_worker":
        return ngettext("at most %(n)d task per worker", "at most %(n)d tasks per worker", value) % {"n": value}
    if rule == "providers":
        return _("only workers from %(providers)s") % {"providers": ", ".join(value)}
    if rule == "language_matched":
        if not value:
            return _("workers of any language")
        name = Language(language).label if language in Language.values else language
        return _("only workers who list %(language)s among their languages") % {"language": name}
    if rule == "qualified_only":
        return _("only workers qualified for the project") if value else _("no project qualification needed")
    if rule == "qualifies_for_project":
        return _("qualifying round: at least %(share)s right qualifies a worker for the project") % {"share": _share(value)}
    if rule in ("warn_after_failed_checks", "stop_after_failed_checks"):
        if not value:
            return _("no warning after failed checks") if rule.startswith("warn") else _("no stop after failed checks")
        if rule.startswith("warn"):
            return ngettext("a warning after %(n)d failed check", "a warning after %(n)d failed checks", value) % {"n": value}
        return ngettext("no more tasks after %(n)d failed check", "no more tasks after %(n)d failed checks",
                        value) % {"n": value}
    if rule == "tasks_per_participant":
        return ngettext("%(n)d task per provider session", "%(n)d tasks per provider session", value) % {"n": value}
    if rule == "min_gold_accuracy_for_approval":
        if value is None:
            return _("approved automatically whatever the gold accuracy")
        return _("approved automatically from %(share)s gold accuracy") % {"share": _share(value)}
    return f"{rule}: {value}"  # a rule this module does not know yet still shows, as stored


def describe_rules(rules: dict | None, *, language: str | None = None) -> list[tuple[str, str]]:
    """``(rule, words)`` for each rule of a round, in the order they were given."""
    return [(rule, describe_rule(rule, value, language=language)) for rule, value in (rules or {}).items()]
