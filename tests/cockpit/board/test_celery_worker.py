"""A step run started from the board executes in a real Celery worker consuming from Redis."""
import pytest
from celery.contrib.testing.worker import start_worker
from django.urls import reverse

from crowdbench.celery import app
from datasets_app.models import Instance, ReferenceCandidate
from stepruns.models import StepRun
from tests.pipeline.test_celery_worker import redis_broker, task_finished  # noqa: F401  (fixture)

from ..conftest import PASSWORD
from .conftest import MODEL, project_instance

S = Instance.Status


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_board_run_is_queued_then_run_by_the_worker(client, researcher, project, redis_broker, llm_settings):  # noqa: F811
    instances = [project_instance(project, status=S.AWAITING_REFERENCE) for _ in range(2)]
    client.login(username=researcher.username, password=PASSWORD)
    response = client.post(reverse("cockpit:start-step", args=[project.slug, "generate_references"]),
                           {"generate_references-run-model": MODEL, "generate_references-run-budget_usd": "1"})
    run = StepRun.objects.get()
    # No worker yet: the run waits in the broker's queue, and its page says so.
    assert response.status_code == 302 and run.status == StepRun.Status.QUEUED
    page = client.get(response.url).content.decode()
    assert 'data-active="1"' in page and "queued" in page and not ReferenceCandidate.objects.exists()

    with task_finished("stepruns.execute_run") as finished, \
            start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=10,
                         loglevel="WARNING"):
        finished.wait(120)  # a bound on waiting, not a speed check
    run.refresh_from_db()
    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    assert (run.done, run.total) == (2, 2) and run.cost_usd > 0
    assert sorted(ReferenceCandidate.objects.values_list("instance_id", flat=True)) == [i.pk for i in instances]
    assert 'data-active="0"' in client.get(response.url).content.decode()
