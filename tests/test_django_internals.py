"""The raw SQL built on Django's compiler internals runs only on the Django versions it was checked against.

``djangokit/prepared.py`` (``PreparedQuery``: compiled SQL bound again, a compiler copied with its
``as_sql`` replaced) and ``annotation.services.engine._insert_if_slot_free`` (an INSERT ... SELECT
from the insert compiler's ``prepare_value``, ``pre_save_val`` and ``field_as_sql``) reach past the
ORM's public API. A Django upgrade may change those internals without notice: this test fails first,
naming the code to re-check; until then both fall back to the plain ORM on an unknown version.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import django
import pytest
from django.conf import settings
from django.utils import timezone

from annotation.models import Assignment
from annotation.services import engine
from annotation.services.engine import request_assignment
from djangokit import prepared
from djangokit.prepared import COMPILER_INTERNALS_DJANGO, PreparedQuery

from .annotation.factories import make_candidate, make_round, make_worker

RECHECK = (
    "re-check djangokit/prepared.py (PreparedQuery._compile, _bound_queryset, _Compiled.converters_for) and "
    "annotation/services/engine.py (_insert_if_slot_free) against the new Django's SQLCompiler and "
    "SQLInsertCompiler, run tests/scale/test_prepared_queries.py, tests/annotation/test_quick_claim.py and "
    "tests/annotation/test_concurrency.py (on PostgreSQL), then add the version to "
    "djangokit.prepared.COMPILER_INTERNALS_DJANGO"
)


def _shown(versions) -> str:
    return ", ".join(f"{major}.{minor}" for major, minor in sorted(versions))


def test_the_running_django_is_one_the_compiler_internals_were_checked_against():
    running = tuple(django.VERSION[:2])
    assert running in COMPILER_INTERNALS_DJANGO, (
        f"Django {django.get_version()} is not among the versions the compiler-internals SQL was checked "
        f"against ({_shown(COMPILER_INTERNALS_DJANGO)}): {RECHECK}"
    )


def test_the_requirements_allow_only_checked_versions():
    # Django>=A.B,<C.D: every minor version the pin lets pip install must have been checked.
    text = (Path(settings.BASE_DIR) / "requirements.txt").read_text(encoding="utf-8")
    pin = re.search(r"^Django>=(\d+)\.(\d+)(?:\.\d+)?,<(\d+)\.(\d+)\s", text, re.MULTILINE | re.IGNORECASE)
    assert pin, "requirements.txt pins Django as Django>=A.B,<C.D"
    low, high = (int(pin[1]), int(pin[2])), (int(pin[3]), int(pin[4]))
    allowed = {(low[0], minor) for minor in range(low[1], high[1] if high[0] == low[0] else 10)}
    unchecked = allowed - COMPILER_INTERNALS_DJANGO
    assert not unchecked, f"requirements.txt allows Django {_shown(unchecked)}, never checked: {RECHECK}"


@pytest.fixture
def unknown_django(monkeypatch):
    """Django as a version the internals were not checked against."""
    monkeypatch.setattr(django, "VERSION", (9, 9, 0, "final", 0))
    assert not prepared.compiler_internals_supported()


@pytest.mark.django_db
def test_on_an_unknown_django_prepared_queries_are_the_orms(unknown_django):
    round = make_round(task_type="verification", targets=[make_candidate(), make_candidate()], open=False)
    items = PreparedQuery(lambda _shape, round_id: round.items.model.objects.filter(round=round_id).order_by("pk"))
    assert [item.pk for item in items.all(round_id=round.pk)] == list(round.items.order_by("pk")
                                                                      .values_list("pk", flat=True))
    assert items._compiled == {}  # nothing was compiled through the internals
    sql, params = items.sql(round_id=round.pk)
    assert round.pk in params and "WHERE" in sql
    assert items.sql(round_id=2**70) is None  # an id beyond any column matches nothing, as before


@pytest.mark.django_db
def test_on_an_unknown_django_the_quick_claim_leaves_the_work_to_the_careful_path(unknown_django):
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker = make_worker()
    late = engine._new_assignment(round=round, item=round.items.get(), worker=worker, now=timezone.now(),
                                  rng=random.Random(1), handler=round.task_type_handler,
                                  provider_assignment_id="", provider_task_id="")
    assert engine._insert_if_slot_free(late, needed=1) is False and late.pk is None
    assignment = request_assignment(round=round, worker=worker)  # still handed out, the careful way
    assert assignment is not None and Assignment.objects.filter(pk=assignment.pk).exists()


@pytest.mark.django_db
def test_save_fields_sends_what_save_sends_and_refuses_a_row_that_is_gone():
    from django.db import DatabaseError, connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import WorkItem
    from djangokit.transitions import save_fields

    round = make_round(task_type="verification", targets=[make_candidate(), make_candidate()])
    first, second = round.items.order_by("position")
    now = timezone.now()
    first.aggregate_result, first.completed_at = {"verdict": "correct", "ünïcode": [1, None]}, now
    second.aggregate_result, second.completed_at = dict(first.aggregate_result), now
    with CaptureQueriesContext(connection) as by_save:
        first.save(update_fields=["aggregate_result", "completed_at"])
    with CaptureQueriesContext(connection) as by_statement:
        save_fields(second, ["aggregate_result", "completed_at"])
    def without_id(sql):
        return re.sub(r'"id" = \d+', '"id" = ID', sql)

    assert [without_id(query["sql"]) for query in by_save.captured_queries] == [
        without_id(query["sql"]) for query in by_statement.captured_queries]
    assert len(by_statement.captured_queries) == 1
    stored = {item.pk: (item.aggregate_result, item.completed_at) for item in WorkItem.objects.filter(round=round)}
    assert stored[first.pk] == stored[second.pk] == (first.aggregate_result, now)
    WorkItem.objects.filter(pk=second.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        save_fields(second, ["aggregate_result"])
