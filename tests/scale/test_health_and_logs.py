"""The health endpoint and the structured logs."""
import json
import logging
import logging.config
import uuid
from unittest import mock

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def test_health_answers_200_with_each_dependency_and_no_login(client):
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "cache": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_health_is_503_when_the_database_is_down_and_tells_no_secret(client, caplog):
    secret = "postgres://crowdbench:s3cret-pass@db.internal/crowdbench"
    with mock.patch.object(connection, "cursor", side_effect=RuntimeError(f"cannot reach {secret}")):
        response = client.get("/health/")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "unavailable", "cache": "ok"}
    assert "s3cret" not in response.content.decode()
    assert "s3cret" not in caplog.text


def test_health_is_503_when_the_cache_is_down(client):
    with mock.patch("crowdbench.views.cache.set", side_effect=ConnectionError("redis down")):
        response = client.get("/health/")
    assert response.status_code == 503
    assert response.json()["cache"] == "unavailable" and response.json()["database"] == "ok"


def test_health_refuses_other_methods_and_is_never_rate_limited(client, settings):
    assert client.post("/health/").status_code == 405
    settings.RATE_LIMITS = {name: {**rule, "per_address": "1/m"} for name, rule in settings.RATE_LIMITS.items()}
    assert all(client.get("/health/").status_code == 200 for _ in range(5))


def test_every_response_carries_a_request_id_and_keeps_only_valid_incoming_ones(client):
    fresh = client.get("/health/")["X-Request-ID"]
    assert uuid.UUID(fresh)
    given = uuid.uuid4().hex
    assert client.get("/health/", HTTP_X_REQUEST_ID=given)["X-Request-ID"] == given
    hostile = "<script>alert(1)</script>\nforged-line"
    answered = client.get("/health/", HTTP_X_REQUEST_ID=hostile)["X-Request-ID"]
    assert answered != hostile and uuid.UUID(answered)


def test_with_a_shared_cache_a_logged_in_request_costs_no_session_query(shared_cache, client, django_user_model):
    user = django_user_model.objects.create_user("someone", password="a-long-pass-123")
    client.force_login(user)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not any("django_session" in sql for sql in sqls), sqls


def test_without_a_shared_cache_a_session_ended_by_another_process_is_ended_here(client, django_user_model):
    """The default cache is one process's memory: a session cached there would survive a logout that
    another server process handled (it deletes the row and only its own cache entry)."""
    from django.contrib.sessions.models import Session

    user = django_user_model.objects.create_user("someone", password="a-long-pass-123")
    client.force_login(user)
    assert client.get("/").wsgi_request.user.is_authenticated
    Session.objects.filter(session_key=client.session.session_key).delete()  # the other process's logout
    assert not client.get("/").wsgi_request.user.is_authenticated


def _configure(log_format, stream):
    config = dict(settings.LOGGING)
    handler = dict(config["handlers"]["console"])
    handler["stream"] = stream
    if log_format == "json":
        handler["formatter"] = "json"
    else:
        handler.pop("formatter", None)
    config["handlers"] = {"console": handler}
    logging.config.dictConfig(config)


@pytest.fixture
def log_stream():
    import io
    stream = io.StringIO()
    yield stream
    logging.config.dictConfig(settings.LOGGING)


def _log_inside_a_request(client, monkeypatch, request_id):
    from crowdbench import views
    original = views._database

    def noisy():
        logging.getLogger("crowdbench.views").warning("checking the database")
        return original()

    monkeypatch.setattr(views, "_database", noisy)
    noisy.__name__ = "_database"
    return client.get("/health/", HTTP_X_REQUEST_ID=request_id, HTTP_COOKIE="sessionid=cookie-secret")


def test_json_logs_are_one_object_per_line_with_the_request_id(client, monkeypatch, log_stream):
    _configure("json", log_stream)
    request_id = uuid.uuid4().hex
    _log_inside_a_request(client, monkeypatch, request_id)
    lines = [json.loads(line) for line in log_stream.getvalue().splitlines()]
    ours = [line for line in lines if line["message"] == "checking the database"]
    assert len(ours) == 1
    assert ours[0]["request_id"] == request_id
    assert ours[0]["level"] == "WARNING" and ours[0]["logger"] == "crowdbench.views" and ours[0]["time"]
    assert "cookie-secret" not in log_stream.getvalue()


def test_plain_logs_stay_the_default_format(client, monkeypatch, log_stream):
    _configure("text", log_stream)
    _log_inside_a_request(client, monkeypatch, uuid.uuid4().hex)
    assert "checking the database\n" in log_stream.getvalue()
    assert not log_stream.getvalue().lstrip().startswith("{")


def test_an_unknown_log_format_is_refused():
    from django.core.exceptions import ImproperlyConfigured

    from tests.settings_env import load_settings

    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT must be text or json"):
        load_settings(LOG_FORMAT="xml", DEBUG="1")
