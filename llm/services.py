"""Writes: prompt template versions, runs, and the calls' records (the one writer of ``LLMCall.status``)."""
from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.db import IntegrityError, transaction

from djangokit.transitions import move_all

from .calls import RenderedPrompt
from .models import LLM_CALL_STATUS, LLMCall, LLMRun, PromptTemplate


@transaction.atomic
def create_template_version(*, name: str, text: str, description: str = "") -> PromptTemplate:
    """Store ``text`` as the next version of ``name`` (version 1 for a new name)."""
    latest = PromptTemplate.objects.select_for_update().filter(name=name).order_by("-version").first()
    template = PromptTemplate(
        name=name, version=(latest.version + 1) if latest else 1, text=text, description=description
    )
    template.full_clean()
    template.save()
    return template


def ensure_template(*, name: str, text: str, description: str = "") -> PromptTemplate:
    """The latest version of ``name`` if its text is ``text``, otherwise a new version with it.

    Lets code ship a default prompt while edits made in the admin stay versioned.
    """
    for _ in range(3):  # two processes may add the same version at once; the loser looks again
        latest = PromptTemplate.objects.filter(name=name).order_by("-version").first()
        if latest is not None and latest.text == text:
            return latest
        try:
            return create_template_version(name=name, text=text, description=description)
        except IntegrityError:
            continue
    raise IntegrityError(f"could not add a version of prompt template {name!r}")


def ensure_default_templates(defaults: dict[str, tuple[str, str]]) -> dict[str, PromptTemplate]:
    """For each ``name: (text, description)``, the latest version, adding ours only for a name
    with no version yet: unlike ``ensure_template``, a version edited in the admin stays in use."""
    templates = {}
    for name, (text, description) in defaults.items():
        existing = PromptTemplate.objects.filter(name=name).order_by("-version").first()
        templates[name] = existing or ensure_template(name=name, text=text, description=description)
    return templates


def render_template(name: str, version: int | None = None, /, **values: object) -> RenderedPrompt:
    """Render the given (default: latest) version of a template, keeping its name and version."""
    if version is None:
        template = PromptTemplate.objects.latest_version(name)
    else:
        template = PromptTemplate.objects.get(name=name, version=version)
    return RenderedPrompt(template.render(**values), template.name, template.version)


def create_run(*, name: str, budget_usd: Decimal | float | str | None = None, purpose: str = "") -> LLMRun:
    budget = None if budget_usd is None else Decimal(str(budget_usd))
    if budget is not None and budget < 0:
        raise ValueError("budget_usd must not be negative")
    run = LLMRun(name=name, budget_usd=budget, purpose=purpose)
    run.full_clean()
    run.save()
    return run


def reject_answers(*, call_ids: Iterable[int | None], reason: str) -> int:
    """Mark stored answers as unusable: they stay on record but leave the response cache, so the
    same request is sent again next time. Returns how many calls were marked."""
    ids = [call_id for call_id in call_ids if call_id is not None]
    return move_all(LLMCall.objects.filter(pk__in=ids), LLM_CALL_STATUS, "reject", error=reason[:2000])


def new_call(*, ok: bool, **fields) -> LLMCall:
    """The unsaved record of one call, ok or failed (``bulk_create`` stores many at once)."""
    return LLMCall(status=LLM_CALL_STATUS.check_initial(LLMCall.Status.OK if ok else LLMCall.Status.FAILED), **fields)


def save_call(row: LLMCall) -> None:
    """Store one call's record. When another process stored a success for the same request meanwhile,
    keep ours (it was paid for) as a failure, out of the response cache, so spending still adds up."""
    row.pk = None
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        row.pk = None
        row.status = LLM_CALL_STATUS.check_initial(LLMCall.Status.FAILED)
        row.error = "an identical request succeeded concurrently; this response was not cached"
        row.save()
