"""The demo's LLM step: with no LLM server configured, ``load_demo`` has the embedded model write the
reference of the demo instance awaiting one, as a "Generate references" run of the board (the same
service a researcher's click starts), so the demo's board shows an LLM step run from start to end.

A configured server is not called at load time, since its calls may cost money: its steps are run
from the board."""
from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils.translation import ngettext

from annotation.models import WorkItem
from llm import embedded
from llm.config import LLMConfig, missing_server_help
from llm.overview import load_embedded_model
from stepruns.errors import RunRefused
from stepruns.kinds.references import GenerateReferences
from stepruns.models import StepRun
from stepruns.services import start_run

# The embedded model costs nothing; a budget is still set, as the board asks for one.
DEMO_BUDGET_USD = Decimal("0.10")


def run_demo_reference_step(*, project, researcher) -> str:
    """Run "Generate references" over ``project``'s instances awaiting one on the embedded model, when
    no server is configured; returns a line saying what ran (or why nothing did)."""
    config = LLMConfig.from_settings()
    if config.has_server and not config.embedded:
        return ("LLM steps: none run at load time (a configured server may charge for its calls); "
                "run them from the project's board.")
    if not config.embedded:
        return f"LLM steps: none run. {missing_server_help()}"
    awaiting = GenerateReferences().pending(project=project)
    if not awaiting:
        return "LLM steps: no demo instance awaits a reference."
    # Carried out here (no broker): the model is loaded first, so the run's calls time answers only.
    loading = load_embedded_model() if settings.CELERY_TASK_ALWAYS_EAGER else None
    started = time.perf_counter()
    try:
        # Without a broker the run is carried out when this transaction commits, as from the board.
        with transaction.atomic():
            run = start_run(project=project, user=researcher, kind=GenerateReferences.name,
                            model=config.model, budget_usd=DEMO_BUDGET_USD)
    except RunRefused as refusal:
        return f"LLM steps: {GenerateReferences.label} not started: {refusal.message}"
    run.refresh_from_db()
    seconds = time.perf_counter() - started
    about = f"on the embedded model {config.model} ({embedded.EMBEDDED_DESCRIPTION})"
    if run.status in (StepRun.Status.QUEUED, StepRun.Status.RUNNING):
        return f"LLM step: {GenerateReferences.label} {about} is queued for the task worker (run {run.pk})."
    loaded = "" if loading is None else f", after {loading:.1f} s loading the model"
    return (f"LLM step: {GenerateReferences.label} {about}, run {run.pk}: {run.get_status_display()} "
            f"in {seconds:.1f} s{loaded}. {_outcome(run, awaiting)}")


def _count(n: int, singular: str, plural: str) -> str:
    return ngettext(singular, plural, n) % {"n": n}


def _outcome(run: StepRun, awaiting: int) -> str:
    """What the run wrote, worded right for one and for many."""
    candidate_ids = run.result.get("candidate_ids", [])
    line = _count(len(candidate_ids), "%(n)d reference candidate written", "%(n)d reference candidates written")
    line += " for " + _count(awaiting, "the %(n)d instance awaiting one", "the %(n)d instances awaiting one")
    if run.failures:
        line += f"; {len(run.failures)} failed (the first: {run.failures[0]})"
    routed = Counter(WorkItem.objects.filter(candidate_id__in=candidate_ids).values_list("round_id", flat=True))
    for round_id, items in sorted(routed.items()):
        line += "; " + _count(items, "%(n)d verification item", "%(n)d verification items") + f" in round {round_id}"
    return line + "."
