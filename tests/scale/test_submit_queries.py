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
# conditional insert, the instance's images; the locked assignment, the locked item, and its update which
# also counts the item's judgments.
QUERY_BUDGET = 9


def on_postgresql() -> bool:
    return connection.vendor == "postgresql"


def budget(postgresql: int) -> int:
    """Elsewhere the item's judgments are counted in a statement of their own (``move_reading``)."""
    return postgresql if on_postgresql() else postgresql + 1


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
    assert len(statements) <= budget(QUERY_BUDGET), f"{len(statements)} statements:\n{listing}"
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 2
    # The submission writes the fields it sets, not the whole row.
    (update,) = [sql for sql in statements if sql.startswith("UPDATE")]
    assert '"payload"' in update and '"presentation"' not in update and '"round_id"' not in update


# Submit-and-next, with the worker's user cached (``USER_CACHE_SECONDS`` with a shared cache): the
# locked assignment with its round and the worker's facts in it, the locked item, the update that
# also counts the item's judgments (after the item's lock: it sees every judgment committed before
# the lock was granted); then the claim of the next item, its conditional insert and the instance's
# images. 10 for next + submit, in two requests, before submit-and-next (docs/deploy.md).
SUBMIT_AND_NEXT_BUDGET = 6


def statements_of(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"] not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT")]


def one_submit_and_next_counted(round):
    """A logged-in worker's second submit-and-next in ``round`` (the first fills the user cache; the
    worker record was made by "next task" before it): the task it submitted, the answer, and every
    statement it sent."""
    client = APIClient()
    user = make_worker_user(password="work-pass-123")
    assert client.login(username=user.username, password="work-pass-123")
    task = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    task = client.post(task["submit_and_next_url"], {"choice": "left"}, format="json").json()["next"]["assignment"]
    with CaptureQueriesContext(connection) as queries:
        response = client.post(task["submit_and_next_url"], {"choice": "right"}, format="json")
    assert response.status_code == 201, response.content
    return task, response, statements_of(queries)


def test_submit_and_next_stays_within_its_statement_budget(shared_cache, settings):
    settings.USER_CACHE_SECONDS = 300
    task, response, statements = one_submit_and_next_counted(pairwise_round(items=6))
    assert response.json()["next"]["assignment"]["id"] not in (None, task["id"])
    listing = "\n".join(statements)
    assert len(statements) <= budget(SUBMIT_AND_NEXT_BUDGET), f"{len(statements)} statements:\n{listing}"
    assert not [sql for sql in statements if 'FROM "auth_user"' in sql or "SAVEPOINT" in sql], listing


def test_a_submission_that_completes_its_item_counts_the_judgments_read_with_its_update(shared_cache):
    """The item's count comes with the UPDATE (``move_reading``): the last judgment completes it."""
    round = pairwise_round(items=1, workers_per_item=2)
    for choice in ("left", "right"):
        client = APIClient()
        client.force_login(make_worker_user())
        task = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
        response = client.post(task["submit_and_next_url"], {"choice": choice}, format="json")
        assert response.status_code == 201
    item = round.items.get()
    assert item.completed_at is not None and item.aggregate_result is not None
    round.refresh_from_db()
    assert round.status == "complete"
    assert response.json()["next"]["assignment"] is None


# A submit-and-next that completes its item, on top of the six: the item's counted answers (its
# aggregate), one UPDATE of the item (completed with its aggregate), the round row asked for without
# waiting and the look for another open item. It took eight more, with a savepoint around the round's
# lock and the worker's facts read again, before an item's completion was trimmed (docs/deploy.md).
COMPLETING_SUBMIT_AND_NEXT_BUDGET = SUBMIT_AND_NEXT_BUDGET + 4


def test_a_submit_and_next_that_completes_its_item_stays_within_its_statement_budget(shared_cache, settings):
    settings.USER_CACHE_SECONDS = 300
    round = pairwise_round(items=4, workers_per_item=1)
    _task, response, statements = one_submit_and_next_counted(round)
    assert response.json()["next"]["assignment"] is not None
    assert round.items.filter(completed_at__isnull=False).count() == 2
    listing = "\n".join(statements)
    assert len(statements) <= budget(COMPLETING_SUBMIT_AND_NEXT_BUDGET), f"{len(statements)} statements:\n{listing}"
    assert not [sql for sql in statements if "SAVEPOINT" in sql], listing


# A submit-and-next that finds nothing left for the worker (each worker's last one in a round, while
# other workers' tasks keep the round open): the submission's three, the claim that finds no item, and
# one look for an item with a slot free once expired holds are let go. It took eight, expiring holds
# and looking again under a lock, before that look (docs/deploy.md).
NOTHING_LEFT_SUBMIT_AND_NEXT_BUDGET = 5


def test_a_submit_and_next_that_finds_nothing_left_stays_within_its_statement_budget(shared_cache, settings):
    settings.USER_CACHE_SECONDS = 300
    round = pairwise_round(items=2, workers_per_item=2)
    _task, response, statements = one_submit_and_next_counted(round)
    following = response.json()["next"]
    assert following["assignment"] is None and following["detail"]
    round.refresh_from_db()
    assert round.status == "open"  # each item still needs another worker's judgment
    listing = "\n".join(statements)
    assert len(statements) <= budget(NOTHING_LEFT_SUBMIT_AND_NEXT_BUDGET), f"{len(statements)} statements:\n{listing}"
    # Nothing was expired or deleted on the way: no hold had run out.
    assert not [sql for sql in statements if sql.startswith("DELETE") or "SET \"status\" = 'expired'" in sql], listing
