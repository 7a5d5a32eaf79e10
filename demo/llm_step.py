"""The demo's LLM step: with no LLM server configured, ``load_demo`` has the embedded model write the
reference of the demo instance awaiting one, as a "Generate references" run of the board (the same
service a researcher's click starts), so the demo's board shows an LLM step run from start to end.

A configured server is not called at load time, since its calls may cost money: its steps are run
from the board."""
from __future__ import annotations

import time
from decimal import Decimal

from django.db import transaction

from llm import embedded
from llm.config import LLMConfig, missing_server_help
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
    if not GenerateReferences().pending(project=project):
        return "LLM steps: no demo instance awaits a reference."
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
    return (f"LLM step: {GenerateReferences.label} {about}, run {run.pk}: {run.get_status_display()} "
            f"in {seconds:.1f} s. {run.summary}")
