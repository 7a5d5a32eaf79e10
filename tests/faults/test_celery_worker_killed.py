"""The Celery worker killed (SIGKILL, pool and all) in the middle of an LLM step run: a new worker finishes
the run, and no prompt whose answer was already stored is sent (and paid for) again.

The run's task is acknowledged late, so the broker hands it out again once its visibility timeout has
passed; the new worker takes the run over because the killed one stopped beating, and the re-run
gets the stored answers from the LLM cache. The local OpenAI fake counts the requests of each prompt.
"""
from __future__ import annotations

import json
import re
import signal
from collections import Counter

import pytest
from django.contrib.auth.models import User

from crowdbench.celery import app
from datasets_app.models import Instance, ReferenceCandidate
from fakes.openai_server import FakeOpenAIServer, judge_responder
from harness.processes import server_environment, start_celery_worker, stop_group, wait_for
from llm.models import LLMCall
from projects.services import create_project
from stepruns.models import StepRun
from stepruns.services import start_run
from tests.cockpit.board.conftest import MODEL, PRICES, project_instance
from tests.pipeline.test_celery_worker import _forget_connections

pytestmark = [pytest.mark.postgres, pytest.mark.celery_worker]

INSTANCES = 30
CONCURRENCY = 2
MARKER = re.compile(r"fault-scene-(\d+)")


@pytest.fixture
def broker(settings, redis_server):
    """A private redis-server as broker, for this process (which queues the run) and the workers."""
    server = redis_server
    saved = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager")}
    settings.CELERY_BROKER_URL = server.url(0)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url=server.url(0), result_backend=server.url(0), task_always_eager=False)
    _forget_connections()
    try:
        yield server
    finally:
        app.conf.update(saved)
        _forget_connections()


@pytest.fixture
def fake_llm():
    # Slow enough answers that the worker is killed with most of the batch still to do.
    with FakeOpenAIServer(responder=judge_responder, models=(MODEL,), latency=0.2) as server:
        yield server


def markers(text: str) -> set[int]:
    return {int(n) for n in MARKER.findall(text)}


def stored_answers() -> set[int]:
    """The scenes whose answer is stored in the LLM cache."""
    found = set()
    for request in LLMCall.objects.filter(status=LLMCall.Status.OK).values_list("request", flat=True):
        found |= markers(json.dumps(request))
    return found


def test_a_killed_worker_s_run_is_finished_by_the_next_without_paying_twice(test_database_url, broker, fake_llm,
                                                                          settings, tmp_path):
    settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake_llm.base_url, "", MODEL
    settings.LLM_PRICES = PRICES
    owner = User.objects.create_user("owner")
    project = create_project(name="Faults", slug="faults", owner=owner)
    instances = [project_instance(project, status=Instance.Status.AWAITING_REFERENCE,
                                  instruction=f"Describe fault-scene-{n}.") for n in range(INSTANCES)]
    env = server_environment(
        database_url=test_database_url, static_root=str(tmp_path), CELERY_BROKER_URL=broker.url(0),
        LLM_BASE_URL=fake_llm.base_url, LLM_API_KEY="", LLM_MODEL=MODEL, LLM_PRICES=json.dumps(PRICES),
        LLM_MAX_RETRIES="0", LLM_MAX_CONCURRENCY=str(CONCURRENCY), LLM_ADAPTIVE_CONCURRENCY="0",
        # Seconds instead of minutes, in the same proportions as the defaults.
        STEP_RUN_HEARTBEAT_SECONDS="0.5", STEP_RUN_STALE_SECONDS="2", CELERY_VISIBILITY_TIMEOUT="4")
    first_log, second_log = open(tmp_path / "worker-1.log", "w"), open(tmp_path / "worker-2.log", "w")
    first = start_celery_worker(env, log=first_log)
    second = None
    try:
        run = start_run(project=project, user=owner, kind="generate_references", model=MODEL, budget_usd="5")
        wait_for(lambda: len(stored_answers()) >= 8, "the first worker storing answers", seconds=120)
        stop_group(first, signal.SIGKILL)
        answered_before = stored_answers()  # exact: nothing writes any more
        run.refresh_from_db()
        assert run.status == StepRun.Status.RUNNING and run.attempts == 1
        assert len(answered_before) < INSTANCES - 5, "the batch was nearly done before the kill"
        asked_before = Counter(n for request in fake_llm.completion_requests
                               for n in markers(json.dumps(request.body)))

        second = start_celery_worker(env, log=second_log)
        wait_for(lambda: not StepRun.objects.get(pk=run.pk).is_active, "the second worker finishing the run",
                 seconds=120, pause=0.2)
    finally:
        for worker in (first, second):
            if worker is not None:
                stop_group(worker)
        first_log.close()
        second_log.close()

    run.refresh_from_db()
    assert run.status == StepRun.Status.SUCCEEDED, (run.summary, (tmp_path / "worker-2.log").read_text()[-3000:])
    assert run.attempts == 2
    per_instance = Counter(ReferenceCandidate.objects.values_list("instance_id", flat=True))
    assert per_instance == Counter({instance.pk: 1 for instance in instances})

    asked = Counter(n for request in fake_llm.completion_requests for n in markers(json.dumps(request.body)))
    assert set(asked) == set(range(INSTANCES))
    # Every stored answer was paid for once; only the requests cut off by the kill were sent again.
    assert all(asked[n] == 1 for n in answered_before), {n: asked[n] for n in answered_before if asked[n] != 1}
    resent = {n for n, count in asked.items() if count > 1}
    assert resent <= set(asked_before) - answered_before
    assert all(count <= 2 for count in asked.values())
    # The second attempt counted every request again, its cached answers included.
    assert run.done == run.total == INSTANCES
    # The run's cost is what was paid, both attempts together, the answers the LLM layer stored in the
    # instant before the kill (before the run counted them) included: the second attempt takes those
    # from the cache, at no cost.
    costs = [call.cost_usd for call in LLMCall.objects.all() if call.cost_usd]
    paid = sum(costs)
    assert 0 < run.cost_usd == paid
