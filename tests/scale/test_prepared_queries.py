"""Querysets compiled once (``djangokit.prepared``): the same SQL and the same instances as the ORM's
own queryset, for every parameter value; refused when a parameter cannot be bound safely."""
import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection, connections, transaction
from django.db.models import Count
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.eligibility import read_round_for_worker
from annotation.models import Assignment, WorkItem
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from djangokit.prepared import PreparedQuery, PreparedQueryError

from ..annotation.factories import make_instance, make_outputs, make_round, make_worker_user

# Database behaviour (raw SQL built on Django's compiler internals): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.database_sensitive]


def items_of(shape, round_id: int, position: int):
    return (WorkItem.objects.select_related(*shape).filter(round=round_id, position__gte=position)
            .annotate(judgments=Count("assignments")).order_by("position"))


@pytest.fixture
def two_rounds():
    rounds = []
    for _ in range(2):
        pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(3)]
        rounds.append(make_round(task_type="pairwise", targets=pairs, workers_per_item=2))
    return rounds


def test_the_sql_and_the_instances_are_the_orms_for_every_parameter_value(two_rounds):
    prepared = PreparedQuery(items_of)
    shape = ("output_a__instance", "output_b")
    for round in two_rounds:
        for position in range(4):
            with CaptureQueriesContext(connection) as orm_queries:
                expected = list(items_of(shape, round.pk, position))
            with CaptureQueriesContext(connection) as prepared_queries:
                got = prepared.all(shape, round_id=round.pk, position=position)
            assert [query["sql"] for query in prepared_queries] == [query["sql"] for query in orm_queries]
            assert [item.pk for item in got] == [item.pk for item in expected]
            assert [item.judgments for item in got] == [item.judgments for item in expected]
            for mine, theirs in zip(got, expected):
                # Joined rows come with the item: reading them costs no query.
                with CaptureQueriesContext(connection) as reads:
                    assert mine.output_a.instance.instruction == theirs.output_a.instance.instruction
                    assert mine.output_b.text == theirs.output_b.text
                assert len(reads) == 0
    assert len(prepared._compiled) == 1


def test_each_shape_is_built_and_compiled_once(two_rounds):
    builds = []

    def counted(shape, round_id: int, position: int):
        builds.append(shape)
        return items_of(shape, round_id, position)

    prepared = PreparedQuery(counted)
    for round in two_rounds:
        prepared.all(("output_a",), round_id=round.pk, position=0)
        prepared.all(("output_b",), round_id=round.pk, position=1)
    assert builds == [("output_a",), ("output_b",)]


def test_a_parameter_missing_from_the_sql_or_transformed_is_refused():
    unused = PreparedQuery(lambda shape, round_id: WorkItem.objects.all())
    with pytest.raises(PreparedQueryError, match="round_id"):
        unused.all(round_id=1)

    def contains(shape, text: str):
        return WorkItem.objects.filter(side_a_name__contains=text)

    with pytest.raises(PreparedQueryError, match="text"):
        PreparedQuery(contains).all(text="model")


def test_values_of_the_wrong_type_are_refused_and_ids_beyond_any_column_match_nothing(two_rounds):
    prepared = PreparedQuery(items_of)
    with pytest.raises(TypeError, match="round_id must be int"):
        prepared.all((), round_id="1", position=0)
    with CaptureQueriesContext(connection) as queries:
        assert prepared.all((), round_id=2**70, position=0) == []
    assert len(queries) == 0


def held_until(shape, round_id: int, now: datetime):
    return Assignment.objects.filter(round=round_id, expires_at__gt=now).exclude(
        in_preview=True, expires_at__lte=now).order_by("pk").values_list("pk", flat=True)


def test_a_datetime_parameter_is_bound_as_the_orm_binds_it(two_rounds):
    """Both places the moment shows in the SQL take the value of each call: the rows are the ORM's, on
    either side of every assignment's time limit."""
    round = two_rounds[0]
    start = timezone.now()
    workers = [get_or_create_local_worker(user=make_worker_user()) for _ in range(3)]
    held = [request_assignment(round=round, worker=worker, now=start + timedelta(seconds=10 * n))
            for n, worker in enumerate(workers)]
    prepared = PreparedQuery(held_until)
    for moment in [start, *(assignment.expires_at for assignment in held),
                   held[1].expires_at - timedelta(microseconds=1), start + timedelta(days=1)]:
        with CaptureQueriesContext(connection) as orm_queries:
            expected = list(held_until(None, round.pk, moment))
        with CaptureQueriesContext(connection) as prepared_queries:
            got = prepared.all(round_id=round.pk, now=moment)
        assert got == expected
        assert [query["sql"] for query in prepared_queries] == [query["sql"] for query in orm_queries]
    assert prepared.all(round_id=round.pk, now=held[1].expires_at - timedelta(microseconds=1)) == [
        held[1].pk, held[2].pk]
    with pytest.raises(TypeError, match="now must be an aware datetime"):
        prepared.all(round_id=round.pk, now=datetime(2030, 1, 1))
    with pytest.raises(TypeError, match="now must be datetime"):
        prepared.all(round_id=round.pk, now=start.isoformat())


def test_locking_queries_need_a_transaction(two_rounds):
    prepared = PreparedQuery(lambda shape, item_id: WorkItem.objects.select_for_update().filter(pk=item_id))
    item = WorkItem.objects.filter(round=two_rounds[0]).first()
    with transaction.atomic():
        assert prepared.first(item_id=item.pk) == item
    with pytest.raises(TransactionManagementError):
        prepared.first(item_id=item.pk)


def test_each_thread_runs_on_its_own_connection(two_rounds):
    prepared = PreparedQuery(items_of)
    round = two_rounds[0]
    assert len(prepared.all((), round_id=round.pk, position=0)) == 3
    seen, errors = [], []

    def run():
        try:
            seen.append((len(prepared.all((), round_id=round.pk, position=1)), id(connections["default"])))
        except Exception as error:  # reported below: an assertion in a thread would be lost
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors == []
    assert seen[0][0] == 2 and seen[0][1] != id(connections["default"])


def test_the_worker_api_answers_a_forged_round_or_assignment_id_with_404(two_rounds):
    client = APIClient()
    client.force_login(make_worker_user())
    for round_id in (2**63, 2**70, 0):
        response = client.post(reverse("annotation-api:next", args=[round_id]))
        assert response.status_code == 404, (round_id, response.content)
    response = client.post(reverse("annotation-api:submit", args=[2**70]), {"choice": "left"}, format="json")
    assert response.status_code == 404
    assert Assignment.objects.count() == 0


def test_the_round_and_the_workers_facts_are_read_as_they_are_now(two_rounds):
    round = two_rounds[0]
    worker = get_or_create_local_worker(user=make_worker_user())
    first = read_round_for_worker(round_id=round.pk, worker=worker)
    assert (first.pk, first.name) == (round.pk, round.name)
    assert (first.worker_facts.items, first.worker_facts.done, first.worker_facts.has_open_assignment) == (3, 0, False)
    assignment = request_assignment(round=first, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    request_assignment(round=round, worker=worker)
    again = read_round_for_worker(round_id=round.pk, worker=worker)
    assert (again.worker_facts.done, again.worker_facts.has_open_assignment) == (1, True)
    other = read_round_for_worker(round_id=two_rounds[1].pk, worker=worker)
    assert (other.pk, other.worker_facts.done, other.worker_facts.has_open_assignment) == (two_rounds[1].pk, 0, False)
    for forged in ("x", None, 2**70):
        with pytest.raises(type(round).DoesNotExist):
            read_round_for_worker(round_id=forged, worker=worker)


@pytest.mark.parametrize("setting, expected", [(None, "True 2"), ("0", "None None"), ("1", "True 2")])
def test_prepared_statements_on_postgresql_unless_turned_off(setting, expected):
    import os
    import subprocess
    import sys

    env = {**os.environ, "DATABASE_URL": "postgres://crowdbench@db.invalid:5432/crowdbench", "DEBUG": "1"}
    env.pop("DATABASE_PREPARED_STATEMENTS", None)
    if setting is not None:
        env["DATABASE_PREPARED_STATEMENTS"] = setting
    code = ("from crowdbench import settings as s; o = s.DATABASES['default'].get('OPTIONS', {}); "
            "print(o.get('server_side_binding'), o.get('prepare_threshold'))")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == expected


def test_a_transition_sends_the_orms_own_update_compiled_once_per_shape(two_rounds):
    """``djangokit.transitions``: the conditional UPDATE of a shape (which fields, which of them NULL)
    is compiled once; each call sends the SQL and parameters the ORM's ``update`` would."""
    from django.db.models import Q
    from django.db.models.sql import UpdateQuery

    from annotation.models import ASSIGNMENT_REVIEW, ASSIGNMENT_STATUS
    from djangokit import transitions

    round = two_rounds[0]
    worker = get_or_create_local_worker(user=make_worker_user())
    assignment = request_assignment(round=round, worker=worker)
    steps = {ASSIGNMENT_STATUS: "submit", ASSIGNMENT_REVIEW: "submit"}
    compiled_before = len(transitions._compiled_updates)
    for fields in ({"payload": {"choice": "left"}, "input_stats": None},
                   {"payload": {"choice": "right"}, "input_stats": {"keys": 3}},
                   {"payload": {"choice": "left"}, "input_stats": None}):
        values, condition = transitions._values(Assignment, steps, fields)
        query = Assignment.objects.filter(condition, pk=assignment.pk).query.chain(UpdateQuery)
        query.add_update_values(values)
        orm_sql, orm_params = query.get_compiler("default").as_sql()
        sql, params = transitions._update_statement(Assignment, "default", condition, steps, values, assignment.pk)
        assert sql == orm_sql
        assert [getattr(value, "obj", value) for value in params] == [getattr(value, "obj", value) for value in orm_params]
    # Two shapes: input_stats NULL, and set.
    assert len(transitions._compiled_updates) == compiled_before + 2
    # A condition the ORM alone can write, or an expression, is left to it.
    values, condition = transitions._values(Assignment, steps, {"duration_seconds": Q(pk=1)})
    assert transitions._update_statement(Assignment, "default", condition, steps, values, assignment.pk) is None
    # And the move itself stores what it was given.
    moved, counted = transitions.move_reading(assignment, ASSIGNMENT_STATUS, "submit", also={ASSIGNMENT_REVIEW: "submit"},
                                              read=("SELECT 41 + 1", ()), payload={"choice": "left"},
                                              submitted_at=timezone.now(), result={"winner": "a"})
    assert counted == 42
    stored = Assignment.objects.get(pk=assignment.pk)
    assert (stored.status, stored.review_status, stored.payload) == ("submitted", "submitted", {"choice": "left"})
