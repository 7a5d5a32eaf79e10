"""The pipeline's Celery tasks run in a real worker consuming from the local Redis broker."""
from __future__ import annotations

import os

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.result import AsyncResult, EagerResult

from annotation.models import CollectionRound
from annotation.tasks import generate_references_task
from crowdbench.celery import app
from datasets_app.models import Instance, ModelOutput, ReferenceCandidate
from datasets_app.tasks import generate_outputs_task
from tests.annotation.factories import make_instance
from tests.annotation.factories import make_round

from .builders import caption_instance

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
def test_reference_generation_and_model_outputs_run_in_a_worker_through_redis(redis_broker, llm_settings, fake_server):
    instance = make_instance(captions=False)
    caption_round = make_round(task_type="caption", targets=[instance])
    caption_instance(round=caption_round, captions=["A lighthouse on a cliff at dusk."])
    assert llm_settings.CELERY_TASK_ALWAYS_EAGER is False and app.conf.task_always_eager is False

    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=10,
                      loglevel="WARNING"):
        result = generate_references_task.delay(instance_ids=[instance.pk])
        assert isinstance(result, AsyncResult) and not isinstance(result, EagerResult)
        report = result.get(timeout=60)

        # Extended result meta is written by the worker that ran the task, and read back from Redis.
        assert result.state == "SUCCESS" and result.worker and result.name == "annotation.generate_references"
        candidate = ReferenceCandidate.objects.get(instance=instance)
        assert report["references"]["candidate_ids"] == [candidate.pk]
        caption_round.refresh_from_db()
        assert report["verification_items"] == {
            str(caption_round.follow_up_round_id): [caption_round.follow_up_round.items.get().pk]
        }
        assert "A lighthouse on a cliff at dusk." in str(fake_server.completion_requests[0].body)

        Instance.objects.filter(pk=instance.pk).update(status=Instance.Status.VERIFIED)
        outputs = generate_outputs_task.delay(model="candidate-vlm", base_url=fake_server.base_url).get(timeout=60)
        assert outputs["created"] == 1
        assert ModelOutput.objects.get(instance=instance).model_name == "candidate-vlm"
    assert redis_broker.keys(f"celery-task-meta-{result.id}")
    assert CollectionRound.objects.filter(task_type="verification").count() == 1
