"""A submission is judged by a real Celery worker, with Redis or RabbitMQ as the broker: the API
answers at once with the run queued, and the board has the new model once the worker is done."""
import os

import pytest
from celery.contrib.testing.worker import start_worker

from crowdbench.celery import app
from leaderboard.models import Submission
from stepruns.models import StepRun
from tests.cockpit.board.conftest import judged_instance
from tests.cockpit.board.test_uploads import predictions_csv
from tests.pipeline.test_celery_worker import BROKER_URL as REDIS_URL, celery_on_broker, task_finished

from .test_submissions import outsider, submit

RABBITMQ_URL = os.environ.get("TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request, settings):
    url = REDIS_URL if request.param == "redis" else RABBITMQ_URL
    # broker_heartbeat=0: the test worker stops at once instead of at the next heartbeat.
    with celery_on_broker(url, result_backend=REDIS_URL, broker_heartbeat=0):
        settings.CELERY_BROKER_URL = url
        settings.CELERY_TASK_ALWAYS_EAGER = False
        yield request.param


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

    with task_finished("stepruns.execute_run") as finished, \
            start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=30,
                         loglevel="WARNING"):
        finished.wait(120)  # a bound on waiting, not a speed check
    run.refresh_from_db()
    assert run.status == StepRun.Status.SUCCEEDED, (broker, run.summary)
    detail = client.get(f"/api/leaderboard/{project.slug}/submissions/{response.json()['id']}/").json()
    assert detail["status"] == "succeeded" and detail["judged"] == {"done": 12, "total": 12}
    names = [row["model"] for row in client.get(f"/api/leaderboard/{project.slug}/").json()["models"]]
    assert names[0] == "lab-vlm"
