"""The pipeline's background LLM work (step runs) runs in a real worker consuming from the local Redis broker."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from kombu import Connection, Queue

from crowdbench.celery import app
from datasets_app.models import Instance, ReferenceCandidate
from stepruns.models import StepRun
from tests.annotation.factories import make_instance

from .builders import caption_instance
from .test_follow_up_rounds import chained_caption_round

# A database of its own on the local Redis.
BROKER_URL = os.environ.get("PIPELINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/13")
# Test processes running at once (pytest-xdist workers, another checkout's tests) share the local
# Redis and RabbitMQ: each sends its tasks to a queue of its own, so that no worker started by another
# process takes them (it would run them against its own test database, and this test would wait for
# nothing), and no process empties another's queue.
TEST_QUEUE = f"crowdbench-test-{os.getpid()}"


def empty_test_queue(url: str, *, delete: bool = False) -> None:
    """Empty this process's queue on the broker at ``url``, or delete it so that none is left
    behind; fails, never skips, when the broker is down."""
    with Connection(url) as connection:
        connection.ensure_connection(max_retries=3)
        with connection.channel() as channel:
            queue = Queue(TEST_QUEUE, channel=channel)
            queue.declare()
            queue.delete() if delete else queue.purge()
    if delete and url.startswith("redis://"):
        # Kombu keeps the queue's exchange bindings in keys of their own on Redis.
        connection = redis.Redis.from_url(url)
        for key in connection.scan_iter(f"_kombu.binding*.{TEST_QUEUE}"):
            connection.delete(key)


@contextmanager
def celery_on_broker(url: str, *, result_backend: str, **conf):
    """The Celery app sends to, and test workers consume from, this process's queue on ``url``;
    the app's configuration is restored afterwards. Enter it before changing the CELERY_ Django
    settings: the app reads its configuration from them, and would save the changed values."""
    changes = dict(broker_url=url, result_backend=result_backend, task_always_eager=False,
                   task_default_queue=TEST_QUEUE, **conf)
    saved = {key: app.conf[key] for key in changes}
    empty_test_queue(url)
    app.conf.update(changes)
    _forget_connections()
    try:
        yield
    finally:
        app.conf.update(saved)
        _forget_connections()
        empty_test_queue(url, delete=True)


@pytest.fixture
def redis_broker(settings):
    connection = redis.Redis.from_url(BROKER_URL)
    connection.ping()  # fails (never skips) when Redis is not running
    with celery_on_broker(BROKER_URL, result_backend=BROKER_URL, result_extended=True):
        settings.CELERY_BROKER_URL = BROKER_URL
        settings.CELERY_TASK_ALWAYS_EAGER = False
        yield connection


@contextmanager
def task_finished(name: str):
    """An event set once a worker of this process has run the task ``name`` (Celery's
    ``task_postrun`` signal, sent in the worker's thread). A test waits on it rather than reading
    the database again and again while the worker writes: on the in-memory SQLite test database
    (shared cache) such a read makes the worker's write fail with "database table is locked"."""
    finished = threading.Event()

    def on_postrun(sender=None, **_kwargs):
        if getattr(sender, "name", None) == name:
            finished.set()

    task_postrun.connect(on_postrun, weak=False)
    try:
        yield finished
    finally:
        task_postrun.disconnect(on_postrun)


def _forget_connections() -> None:
    # The app caches its result backend and broker connections on first use: those made by an
    # earlier eager test would otherwise outlive the configuration change. Its queues and routes
    # are cached too, from the default queue's name.
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)
    app._after_fork()
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        for cached in ("queues", "default_queue", "default_exchange", "router"):
            amqp.__dict__.pop(cached, None)


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

    with task_finished("stepruns.execute_run") as finished:
        with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=10,
                          loglevel="WARNING"):
            assert finished.wait(timeout=120)  # a bound on waiting, not a speed check
    run.refresh_from_db()

    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    assert run.attempts == 1 and run.heartbeat_at is not None and (run.done, run.total) == (1, 1)
    candidate = ReferenceCandidate.objects.get(instance=instance)
    assert run.result["candidate_ids"] == [candidate.pk]
    assert verification_round.items.get().candidate == candidate
    assert Instance.objects.get(pk=instance.pk).status == Instance.Status.AWAITING_VERIFICATION
    assert "A lighthouse on a cliff at dusk." in str(fake_server.completion_requests[0].body)
