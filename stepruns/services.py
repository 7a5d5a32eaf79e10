"""Start a background step run and carry it out: the board's view and the Celery task call these.

``start_run`` checks the request, stores a queued run and hands its id to the Celery task
(in-process when no broker is configured, ``CELERY_TASK_ALWAYS_EAGER``); ``execute_run`` runs the
kind's service with progress callbacks and records the outcome through ``lifecycle``.
"""
from __future__ import annotations

import logging
import threading
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from kernel.errors import ServiceError
from llm.client import configured_model
from llm.config import LLMNotConfigured, configured_models, unpriced
from llm.params import LLMRunParams

from . import lifecycle
from .errors import RunRefused
from .kinds.registry import KINDS
from .models import StepRun

logger = logging.getLogger(__name__)

BUDGET_DECIMAL_PLACES = 6  # StepRun.budget_usd and LLMRun.budget_usd
BUDGET_STEP = Decimal(1).scaleb(-BUDGET_DECIMAL_PLACES)  # the smallest budget, and its unit
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
    return queue_run(project=project, kind=step_kind.name, model=model, budget_usd=budget, parameters=cleaned,
                     user=user)


def queue_run(*, project, kind: str, model: str, budget_usd: Decimal | None, parameters: dict, user=None) -> StepRun:
    """Store a queued run whose request is already checked, and hand it to the worker after the commit."""
    run = StepRun.objects.create(project=project, kind=kind, model=model, budget_usd=budget_usd,
                                 parameters=parameters, created_by=user)
    transaction.on_commit(lambda: enqueue(run.pk))
    return run


def generate_wanted_reference(sender, *, instance_id: int, verification_round_id: int | None, **kwargs) -> None:
    """The reference an instance awaits after its caption (``annotation.pipeline.reference_wanted``),
    as a run of its project: with the configured model and no budget cap, as the command runs."""
    from datasets_app.models import Instance

    from .kinds.references import GenerateReferences

    try:
        model = configured_model()
    except LLMNotConfigured as error:
        # Nobody to tell but the log: the instance waits for a run from the board or the command.
        logger.error("reference generation for instance %s not started: %s", instance_id, error)
        return
    project = Instance.objects.select_related("family__project").get(pk=instance_id).family.project
    queue_run(project=project, kind=GenerateReferences.name, model=model, budget_usd=None,
              parameters={"instance_ids": [instance_id], "verification_round_id": verification_round_id})


def enqueue(run_id: int) -> None:
    from kombu.exceptions import OperationalError as BrokerUnavailable

    from .tasks import execute_run_task

    try:
        execute_run_task.delay(run_id=run_id)
    except BrokerUnavailable:
        # The run is stored as queued: the sweep hands it out once the broker is back.
        logger.warning("step run %s: the task broker does not answer; the run stays queued until "
                       "resume_step_runs hands it out", run_id)


def execute_run(run_id: int) -> StepRun:
    """Carry out a run: queued → running → succeeded / stopped (budget) / failed.

    A running run whose worker is gone (stale heartbeat: the broker handed its task out again, or
    ``resume_stale_runs`` queued it again) is taken over and carried on; a finished one is left as
    it is. Raises ``RunConflict`` when a live worker holds the run."""
    run = StepRun.objects.select_related("project").get(pk=run_id)
    if not run.is_active:
        return run
    run = lifecycle.begin(run) if run.status == StepRun.Status.QUEUED else lifecycle.take_over(run)
    step_kind = KINDS.get(run.kind)

    def on_requests(count: int) -> None:
        lifecycle.record_progress(run, added=count)

    def progress(result) -> None:
        lifecycle.record_progress(run, answered=1)

    with Heartbeat(run):
        try:
            # Every attempt charges the run's own LLMRun: its cap is the run's budget, and what earlier
            # attempts spent is already in it.
            llm = LLMRunParams(model=run.model, run=run.llm_run, progress=progress, on_requests=on_requests)
            outcome = step_kind.execute(project=run.project, llm=llm, parameters=run.parameters)
        except LLMNotConfigured as error:
            return lifecycle.fail(run, f"The LLM is not configured: {error}")
        except ServiceError as error:
            return lifecycle.fail(run, error.message)
        except Exception as error:  # noqa: BLE001 - the run records that it broke off; the log keeps the trace
            logger.exception("step run %s (%s) broke off", run.pk, run.kind)
            return lifecycle.fail(run, f"the step broke off with an internal error ({type(error).__name__}); "
                                       "see the server log")
    return lifecycle.finish(run, budget_reached=outcome.budget_reached, summary=outcome.summary,
                            failures=outcome.failures, result=outcome.result)


class Heartbeat:
    """Stamps the run as alive every ``STEP_RUN_HEARTBEAT_SECONDS`` from a thread of its own, also
    while a long request is out (progress only stamps when an answer is stored)."""

    def __init__(self, run: StepRun):
        self.run = run
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"step-run-{run.pk}-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(settings.STEP_RUN_HEARTBEAT_SECONDS):
                try:
                    if not lifecycle.heartbeat(self.run):
                        return
                except DatabaseError:  # the database is briefly away: the next beat tries again
                    logger.warning("step run %s: heartbeat not stored", self.run.pk)
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> Heartbeat:
        if not settings.CELERY_TASK_ALWAYS_EAGER:  # in-process runs have no worker to lose
            self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()


def resume_stale_runs() -> list[int]:
    """Queue again the runs whose worker is gone (stale heartbeat), and queued runs that no worker
    took within ``STEP_RUN_STALE_SECONDS`` (their task may have been lost with the broker).

    A worker takes each at most once: a run someone else holds is refused by ``lifecycle``."""
    stale = list(lifecycle.stale_runs().values_list("pk", flat=True))
    waiting = list(StepRun.objects.filter(status=StepRun.Status.QUEUED, created_at__lt=lifecycle.stale_before())
                   .values_list("pk", flat=True))
    for run_id in stale + waiting:
        logger.warning("step run %s: its worker is gone or its task was lost; queued again", run_id)
        enqueue(run_id)
    return stale + waiting
