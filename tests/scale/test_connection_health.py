"""The health check of persistent PostgreSQL connections (``crowdbench.postgresql``): an idle connection
passes without a query, and a connection the server has ended is replaced before a request uses it."""
import select
import time

import psycopg
import pytest
from django.db import close_old_connections, connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def require_postgresql():
    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (DATABASE_URL=postgres://...; make test does)")


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_database_engine_is_the_checked_backend():
    require_postgresql()
    assert connection.settings_dict["ENGINE"] == "crowdbench.postgresql"
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_an_idle_connection_passes_the_check_without_sending_a_query(monkeypatch):
    require_postgresql()
    backend_pid()
    raw = connection.connection

    def no_query(*args, **kwargs):
        raise AssertionError("the health check sent a query")

    monkeypatch.setattr(raw, "execute", no_query)
    monkeypatch.setattr(raw, "cursor", no_query)
    assert connection.is_usable()


@pytest.fixture(params=["poll", "select"])
def readiness_call(request, monkeypatch):
    """Both ways of asking the kernel: poll() where there is one, select() where not (Windows)."""
    if request.param == "select":
        monkeypatch.delattr(select, "poll")
    return request.param


def test_a_connection_the_server_ended_is_replaced_before_the_next_request_uses_it(readiness_call):
    require_postgresql()
    old_pid = backend_pid()
    assert connection.is_usable()
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [old_pid]).fetchone() == (True,)
    deadline = time.monotonic() + 10
    while connection.is_usable():
        assert time.monotonic() < deadline, "the ended connection still passes the check"
        time.sleep(0.05)

    close_old_connections()  # what Django does when a request starts: the next cursor is checked first
    new_pid = backend_pid()  # no error: the ended connection was closed and a new one opened
    assert new_pid != old_pid


def test_a_closed_connection_fails_the_check():
    require_postgresql()
    backend_pid()
    connection.connection.close()
    try:
        assert not connection.is_usable()
    finally:
        connection.close()  # Django's wrapper lets go of it too; the test's clean-up opens a new one
