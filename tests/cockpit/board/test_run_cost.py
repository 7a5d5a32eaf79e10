"""A step run's cost is what its LLM calls were charged, every attempt's: also for an answer the LLM
layer stored just before its worker was lost, whose progress the run never counted (the resumed
attempt takes that answer from the cache at no cost). The fault itself, with a real Celery worker
killed: tests/faults/test_celery_worker_killed.py."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from datasets_app.models import Instance, ReferenceCandidate
from datasets_app.reference_generation import generate_references
from llm.models import LLMCall, LLMRun
from llm.params import LLMRunParams
from llm.selectors import run_cost_from_calls
from llm.services import create_run
from stepruns import lifecycle
from stepruns.models import StepRun
from stepruns.services import execute_run

from .conftest import MODEL, project_instance

# Database behaviour (a run's spending summed in a subquery): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


class WorkerLost(BaseException):
    """Stands for the SIGKILL: like it, no ``except Exception`` of the run sees it."""


def test_an_answer_stored_but_not_counted_before_the_worker_was_lost_is_in_the_run_s_cost(
        project, researcher, llm_settings, fake_server, monkeypatch):
    llm_settings.STEP_RUN_STALE_SECONDS = 60
    instance = project_instance(project, status=Instance.Status.AWAITING_REFERENCE)
    run = StepRun.objects.create(project=project, kind="generate_references", model=MODEL, created_by=researcher,
                                 budget_usd=Decimal("1"))
    count_progress = lifecycle.record_progress

    def lost_before_counting_an_answer(run, *, answered=0, **counts):
        if answered:
            raise WorkerLost
        count_progress(run, **counts)

    monkeypatch.setattr(lifecycle, "record_progress", lost_before_counting_an_answer)
    with pytest.raises(WorkerLost):
        execute_run(run.pk)
    monkeypatch.setattr(lifecycle, "record_progress", count_progress)

    call = LLMCall.objects.get()  # the answer the LLM layer stored, and its cost
    run.refresh_from_db()
    assert call.status == LLMCall.Status.OK and call.cost_usd > 0
    assert (run.status, run.done, run.total, run.cost_usd) == (StepRun.Status.RUNNING, 0, 1, 0)
    assert not ReferenceCandidate.objects.exists()

    StepRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    run = execute_run(run.pk)  # the next worker takes the run over
    assert (run.status, run.attempts, run.done, run.total) == (StepRun.Status.SUCCEEDED, 2, 1, 1)
    assert ReferenceCandidate.objects.get().instance == instance
    assert len(fake_server.completion_requests) == 1 and LLMCall.objects.count() == 1  # the cache answered
    assert run.cost_usd == call.cost_usd
    assert call.run_id == run.llm_run_id and run_cost_from_calls(run.llm_run) == run.cost_usd
    assert "(spent $" + format(call.cost_usd.normalize(), "f") + ")" in run.summary


def test_a_step_given_a_run_charges_it_and_keeps_to_its_cap(project, llm_settings, fake_server):
    instance = project_instance(project, status=Instance.Status.AWAITING_REFERENCE)
    given = create_run(name="a step run's", budget_usd="0.000001")
    report = generate_references(instances=[instance], llm=LLMRunParams(run=given))
    assert report.run_id == given.pk and report.budget_reached and not fake_server.completion_requests
    with pytest.raises(ValueError, match="a run to charge or a budget, not both"):
        generate_references(instances=[instance], llm=LLMRunParams(run=given, budget_usd="1"))
    assert not fake_server.completion_requests and not LLMCall.objects.exists()


def test_a_resumed_attempt_with_nothing_left_to_ask_reports_what_the_run_paid(
        project, researcher, llm_settings, fake_server):
    llm_settings.STEP_RUN_STALE_SECONDS = 60
    run = lifecycle.begin(StepRun.objects.create(project=project, kind="generate_references", model=MODEL,
                                                 created_by=researcher, budget_usd=Decimal("1")))
    # The lost worker's one call, stored and charged as the LLM layer does; then it was lost.
    LLMCall.objects.create(run=run.llm_run, request_hash="lost", endpoint="chat", model=MODEL, request={},
                           status=LLMCall.Status.FAILED, cost_usd=Decimal("0.3"))
    LLMRun.objects.filter(pk=run.llm_run_id).update(spent_usd=Decimal("0.3"))
    StepRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    run = execute_run(run.pk)
    assert run.status == StepRun.Status.SUCCEEDED and not fake_server.completion_requests
    assert run.cost_usd == Decimal("0.3") and "(spent $0.3)" in run.summary
