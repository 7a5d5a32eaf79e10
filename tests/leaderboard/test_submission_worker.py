"""A submission is judged by a real Celery worker, with Redis or RabbitMQ as the broker: the API
answers at once with the run queued, and the board has the new model once the worker is done."""
import os
import time

import pytest
from celery.contrib.testing.worker import start_worker
from kombu import Connection, Queue

from crowdbench.celery import app
from leaderboard.models import Submission
from stepruns.models import StepRun
from tests.cockpit.board.conftest import judged_instance
from tests.cockpit.board.test_uploads import predictions_csv
from tests.pipeline.test_celery_worker import BROKER_URL as REDIS_URL, _forget_connections

from .test_submissions import outsider, submit

RABBITMQ_URL = os.environ.get("TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request, settings):
    url = REDIS_URL if request.param == "redis" else RABBITMQ_URL
    with Connection(url) as connection:
        connection.ensure_connection(max_retries=3)  # fails (never skips) when the broker is down
        with connection.channel() as channel:
            # The default queue, emptied first: nothing left by another run is consumed.
            queue = Queue(app.conf.task_default_queue, channel=channel)
            queue.declare()
            queue.purge()
    saved = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager", "broker_heartbeat")}
    settings.CELERY_BROKER_URL = url
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url=url, result_backend=REDIS_URL, task_always_eager=False,
                    broker_heartbeat=0)  # the test worker stops at once instead of at the next heartbeat
    _forget_connections()
    try:
        yield request.param
    finally:
        app.conf.update(saved)
        _forget_connections()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_submission_is_judged_by_the_worker(broker, project, researcher, llm_settings, fake_server):
    from leaderboard import services

    board = [judged_instance(project) for _ in range(2)]
    services.set_policy(project=project, user=researcher, accepts_outside_submissions=True, judge_model="fake-model",
                        budget_usd="1")
    _record, token = services.create_token(project=project, user=researcher, label="Lab")
    client = outsider(token)
    response = submit(client, project.slug, predictions_csv(board, model="lab-vlm", text=lambda n: "Long " * 20))
    assert response.status_code == 202 and response.json()["status"] == "queued"
    run = Submission.objects.get().step_run
    assert run.status == StepRun.Status.QUEUED and not fake_server.completion_requests

    with start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=30,
                      loglevel="WARNING"):
        deadline = time.monotonic() + 120  # a bound on waiting, not a speed check
        while run.is_active and time.monotonic() < deadline:
            time.sleep(0.1)
            run.refresh_from_db()
    assert run.status == StepRun.Status.SUCCEEDED, (broker, run.summary)
    detail = client.get(f"/api/leaderboard/{project.slug}/submissions/{response.json()['id']}/").json()
    assert detail["status"] == "succeeded" and detail["judged"] == {"done": 12, "total": 12}
    names = [row["model"] for row in client.get(f"/api/leaderboard/{project.slug}/").json()["models"]]
    assert names[0] == "lab-vlm"
