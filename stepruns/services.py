"""Start a background step run and carry it out: the board's view and the Celery task call these.

``start_run`` checks the request, stores a queued run and hands its id to the Celery task
(in-process when no broker is configured, ``CELERY_TASK_ALWAYS_EAGER``); ``execute_run`` runs the
kind's service with progress callbacks and records the outcome through ``lifecycle``.
"""
from __future__ import annotations

import logging
from decimal import Decimal, InvalidOperation

from django.db import transaction

from crowdbench.errors import ServiceError
from llm.config import LLMNotConfigured, configured_models, unpriced

from . import lifecycle
from .errors import RunRefused
from .kinds.registry import KINDS
from .models import StepRun

logger = logging.getLogger(__name__)

BUDGET_DECIMAL_PLACES = 6  # StepRun.budget_usd and LLMRun.budget_usd
MAX_BUDGET_USD = Decimal("1000000")


def clean_budget(value) -> Decimal:
    """A positive amount in USD with at most six decimal places; a run from the board always has one."""
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise RunRefused(f"the budget must be an amount in USD, got {str(value)[:40]!r}") from None
    if not amount.is_finite() or amount <= 0 or amount >= MAX_BUDGET_USD:
        raise RunRefused("the budget must be more than 0 and less than 1,000,000 USD")
    if amount.as_tuple().exponent < -BUDGET_DECIMAL_PLACES:
        raise RunRefused(f"the budget has at most {BUDGET_DECIMAL_PLACES} decimal places")
    return amount


def start_run(*, project, user, kind: str, model: str, budget_usd, parameters: dict | None = None) -> StepRun:
    """Queue a run of ``kind`` over ``project`` and hand it to the worker (or run it now, without
    a broker). Refuses an unknown kind or model, a bad budget, bad parameters, or nothing to do."""
    step_kind = KINDS.get(kind)
    models = configured_models()
    if not models:
        raise RunRefused("No LLM model is configured: set LLM_MODEL (and LLM_BASE_URL or LLM_API_KEY).")
    if model not in models:
        raise RunRefused(f"unknown model {str(model)[:60]!r}; configured: {', '.join(models)}")
    budget = clean_budget(budget_usd)
    if unpriced(model):  # refused now, not after the run has started and stored its inputs
        raise RunRefused(f"{model} has no price in LLM_PRICES, so a budget cannot be kept; add its price "
                         "(USD per million input and output tokens)")
    cleaned = step_kind.check(project=project, parameters=parameters or {})
    run = StepRun.objects.create(project=project, kind=step_kind.name, model=model, budget_usd=budget,
                                 parameters=cleaned, created_by=user)
    transaction.on_commit(lambda: enqueue(run.pk))
    return run


def enqueue(run_id: int) -> None:
    from .tasks import execute_run_task

    execute_run_task.delay(run_id=run_id)


def execute_run(run_id: int) -> StepRun:
    """Carry out a queued run: queued → running → succeeded / stopped (budget) / failed."""
    run = lifecycle.begin(StepRun.objects.select_related("project").get(pk=run_id))
    step_kind = KINDS.get(run.kind)

    def on_requests(count: int) -> None:
        lifecycle.record_progress(run, added=count)

    def progress(result) -> None:
        cost = result.cost_usd if (result.cost_usd is not None and not result.cached) else Decimal(0)
        lifecycle.record_progress(run, answered=1, cost_usd=cost)

    try:
        outcome = step_kind.execute(project=run.project, model=run.model, budget_usd=run.budget_usd,
                                    parameters=run.parameters, progress=progress, on_requests=on_requests)
    except LLMNotConfigured as error:
        return lifecycle.fail(run, f"The LLM is not configured: {error}")
    except ServiceError as error:
        return lifecycle.fail(run, error.message)
    except Exception as error:  # noqa: BLE001 - the run records that it broke off; the log keeps the trace
        logger.exception("step run %s (%s) broke off", run.pk, run.kind)
        return lifecycle.fail(run, f"the step broke off with an internal error ({type(error).__name__}); "
                                   "see the server log")
    return lifecycle.finish(run, budget_reached=outcome.budget_reached, summary=outcome.summary,
                            failures=outcome.failures, cost_usd=outcome.spent_usd, result=outcome.result,
                            llm_run_id=outcome.llm_run_id)
