"""The worker API's common path stays cheap: one "next task" plus one submit, every statement that
reaches the database counted, savepoints included (BEGIN and COMMIT are left out: some backends
report them, others not). It was 49, then 30, before the submit path was reworked (docs/deploy.md)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment

from ..annotation.factories import make_instance, make_outputs, make_round, make_worker_user

# transaction=True: the services' outer transactions are real ones, as in production, not savepoints.
# Database behaviour (statement counts): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.database_sensitive]

# The target: user and worker record (2: one per request), round with the worker's facts, item claim,
# conditional insert, the instance's images; the locked assignment, its update, the locked item and
# its judgment count.
QUERY_BUDGET = 10


def pairwise_round(items: int = 4, workers_per_item: int = 3):
    pairs = []
    for _ in range(items):
        pairs.append(tuple(make_outputs(instance=make_instance())))
    return make_round(task_type="pairwise", targets=pairs, workers_per_item=workers_per_item)


def one_cycle(client, round):
    with CaptureQueriesContext(connection) as queries:
        body = client.post(reverse("annotation-api:next", args=[round.pk])).json()
        assignment = body["assignment"]
        response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]),
                               {"choice": "left"}, format="json")
    assert response.status_code == 201, response.content
    return queries


def test_next_and_submit_stay_within_the_query_budget(shared_cache):
    round = pairwise_round()
    client = APIClient()
    client.force_login(make_worker_user())
    one_cycle(client, round)  # the first request of a worker creates its worker record
    queries = one_cycle(client, round)
    statements = [q["sql"] for q in queries.captured_queries if q["sql"] not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT")]
    listing = "\n".join(statements)
    assert len(statements) <= QUERY_BUDGET, f"{len(statements)} statements:\n{listing}"
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 2
    # The submission writes the fields it sets, not the whole row.
    (update,) = [sql for sql in statements if sql.startswith("UPDATE")]
    assert '"payload"' in update and '"presentation"' not in update and '"round_id"' not in update
