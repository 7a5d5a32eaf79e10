"""The pipeline's background LLM work (step runs) runs in a real worker consuming from the local Redis broker."""
from __future__ import annotations

import os
import time

import pytest
import redis
from celery.contrib.testing.worker import start_worker

from crowdbench.celery import app
from datasets_app.models import Instance, ReferenceCandidate
from stepruns.models import StepRun
from tests.annotation.factories import make_instance

from .builders import caption_instance
from .test_follow_up_rounds import chained_caption_round

# A database of its own on the local Redis, emptied around the test.
BROKER_URL = os.environ.get("PIPELINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture
def redis_broker(settings):
    connection = redis.Redis.from_url(BROKER_URL)
    connection.ping()  # fails (never skips) when Redis is not running
    connection.flushdb()
    saved = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager", "result_extended")}
    settings.CELERY_BROKER_URL = BROKER_URL
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url=BROKER_URL, result_backend=BROKER_URL, task_always_eager=False,
                    result_extended=True)
    _forget_connections()
    try:
        yield connection
    finally:
        app.conf.update(saved)
        _forget_connections()
        connection.flushdb()


def _forget_connections() -> None:
    # The app caches its result backend and broker connections on first use: those made by an
    # earlier eager test would otherwise outlive the configuration change.
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)
    app._after_fork()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_the_reference_a_caption_leaves_awaited_is_a_step_run_done_by_a_worker(redis_broker, llm_settings, fake_server):
    instance = make_instance(captions=False)
    caption_round, verification_round = chained_caption_round(instances=[instance])
    assert llm_settings.CELERY_TASK_ALWAYS_EAGER is False and app.conf.task_always_eager is False

    # The caption commits; its completion queues the run, which waits in Redis until a worker takes it.
    caption_instance(round=caption_round, captions=["A lighthouse on a cliff at dusk."])
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.QUEUED and not fake_server.completion_requests

    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=10,
                      loglevel="WARNING"):
        deadline = time.monotonic() + 120  # a bound on waiting, not a speed check
        while run.is_active and time.monotonic() < deadline:
            time.sleep(0.1)
            run.refresh_from_db()

    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    assert run.attempts == 1 and run.heartbeat_at is not None and (run.done, run.total) == (1, 1)
    candidate = ReferenceCandidate.objects.get(instance=instance)
    assert run.result["candidate_ids"] == [candidate.pk]
    assert verification_round.items.get().candidate == candidate
    assert Instance.objects.get(pk=instance.pk).status == Instance.Status.AWAITING_VERIFICATION
    assert "A lighthouse on a cliff at dusk." in str(fake_server.completion_requests[0].body)
