"""A step run's status changes only through ``stepruns.lifecycle``, along the drawn edges."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from django.db.models import F

from llm.models import LLMCall, LLMRun
from llm.selectors import run_cost_from_calls
from stepruns import lifecycle
from stepruns.errors import RunConflict
from stepruns.models import StepRun

pytestmark = pytest.mark.django_db


def charge(run: StepRun, cost: str) -> None:
    """What the LLM layer does when it stores an answer: the call, and its cost added to the run's
    spending in the same transaction (a failed call here, so it is never served from the cache)."""
    LLMCall.objects.create(run_id=run.llm_run_id, request_hash=f"{cost}-{LLMCall.objects.count()}", endpoint="chat",
                           model="m", request={}, status=LLMCall.Status.FAILED, cost_usd=Decimal(cost))
    LLMRun.objects.filter(pk=run.llm_run_id).update(spent_usd=F("spent_usd") + Decimal(cost))


@pytest.fixture
def run(project, researcher):
    return StepRun.objects.create(project=project, kind="generate_references", model="m", created_by=researcher,
                                  budget_usd=Decimal("1"))


def test_queued_running_succeeded(run):
    assert run.status == StepRun.Status.QUEUED and run.is_active
    lifecycle.begin(run)
    assert run.status == StepRun.Status.RUNNING and run.started_at is not None
    assert run.llm_run.budget_usd == Decimal("1") and run.llm_run.spent_usd == 0
    lifecycle.record_progress(run, added=3)
    charge(run, "0.1")
    charge(run, "0.15")
    lifecycle.record_progress(run, answered=2)
    run.refresh_from_db()
    assert (run.done, run.total, run.cost_usd) == (2, 3, Decimal("0.25"))
    charge(run, "0.05")  # stored, its progress not counted yet
    lifecycle.finish(run, budget_reached=False, summary="done", failures=["instance 1: broke"], result={"ids": [1]})
    assert run.status == StepRun.Status.SUCCEEDED and not run.is_active
    assert run.finished_at is not None and run.failures == ["instance 1: broke"]
    assert run.cost_usd == Decimal("0.30") == run_cost_from_calls(run.llm_run)


def test_budget_reached_is_stopped_and_a_failure_is_failed(run, project, researcher):
    lifecycle.begin(run)
    lifecycle.finish(run, budget_reached=True, summary="", failures=[], result={})
    assert run.status == StepRun.Status.STOPPED
    other = StepRun.objects.create(project=project, kind="judge_outputs", model="m", created_by=researcher)
    lifecycle.fail(other, "The LLM is not configured")
    assert other.status == StepRun.Status.FAILED and other.summary == "The LLM is not configured"
    assert other.llm_run is None and other.cost_usd == 0  # it never began


def test_a_run_that_broke_off_costs_what_its_calls_were_charged(run):
    lifecycle.begin(run)
    charge(run, "0.07")
    lifecycle.fail(run, "broke off")
    assert run.status == StepRun.Status.FAILED and run.cost_usd == Decimal("0.07")


@pytest.mark.parametrize("illegal", [
    lambda run: lifecycle.finish(run, budget_reached=False, summary="", failures=[], result={}),
    lambda run: lifecycle.record_progress(run, answered=1),
])
def test_a_queued_run_cannot_finish_or_progress(run, illegal):
    with pytest.raises(RunConflict) as refused:
        illegal(run)
    assert refused.value.status_code == 409 and f"step run {run.pk} is" in refused.value.message
    run.refresh_from_db()
    assert run.status == StepRun.Status.QUEUED and run.done == 0


def test_a_run_is_taken_once_and_a_finished_run_stays_finished(run):
    lifecycle.begin(run)
    with pytest.raises(RunConflict):
        lifecycle.begin(StepRun.objects.get(pk=run.pk))  # a second worker
    lifecycle.fail(run, "broke off")
    for change in (lifecycle.begin, lambda r: lifecycle.fail(r, "again"),
                   lambda r: lifecycle.finish(r, budget_reached=False, summary="", failures=[], result={})):
        with pytest.raises(RunConflict):
            change(StepRun.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == StepRun.Status.FAILED and run.summary == "broke off"


def test_failure_messages_are_bounded(run):
    lifecycle.begin(run)
    lifecycle.finish(run, budget_reached=False, summary="", failures=["x" * 2000] * 250, result={})
    assert len(run.failures) == lifecycle.MAX_FAILURES_KEPT + 1
    assert len(run.failures[0]) == lifecycle.MAX_MESSAGE_CHARACTERS and run.failures[-1] == "… and 50 more"


def test_a_run_whose_worker_stopped_beating_is_taken_over_once(run, settings):
    settings.STEP_RUN_STALE_SECONDS = 60
    lifecycle.begin(run)
    lifecycle.record_progress(run, added=4)
    charge(run, "0.2")
    lifecycle.record_progress(run, answered=3)
    charge(run, "0.05")  # stored just before the worker was lost, its progress never counted
    assert lifecycle.heartbeat(run) is True
    with pytest.raises(RunConflict) as held:  # its worker beats: nobody else takes it
        lifecycle.take_over(StepRun.objects.get(pk=run.pk))
    assert "live worker" in held.value.message
    assert list(lifecycle.stale_runs()) == []

    StepRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    assert list(lifecycle.stale_runs()) == [run]
    taken = lifecycle.take_over(StepRun.objects.get(pk=run.pk))
    assert (taken.status, taken.attempts, taken.done, taken.total) == (StepRun.Status.RUNNING, 2, 0, 0)
    # What the lost worker spent stays spent, the answer it stored without counting it included, and
    # the new attempt charges the same LLM run.
    assert taken.cost_usd == Decimal("0.25") and taken.llm_run_id == run.llm_run_id
    with pytest.raises(RunConflict):  # a third worker, a moment later
        lifecycle.take_over(StepRun.objects.get(pk=run.pk))


def test_a_finished_run_stops_beating_and_cannot_be_taken_over(run, settings):
    settings.STEP_RUN_STALE_SECONDS = 0
    lifecycle.begin(run)
    lifecycle.fail(run, "broke off")
    assert lifecycle.heartbeat(run) is False
    with pytest.raises(RunConflict):
        lifecycle.take_over(run)


def test_a_run_begun_before_runs_had_an_llm_run_gets_one_when_taken_over(run):
    StepRun.objects.filter(pk=run.pk).update(status=StepRun.Status.RUNNING, attempts=1, heartbeat_at=None)
    taken = lifecycle.take_over(StepRun.objects.get(pk=run.pk))
    assert taken.attempts == 2 and taken.llm_run.budget_usd == Decimal("1")
