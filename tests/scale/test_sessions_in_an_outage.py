"""Session writes that meet a database outage answer 503 (asked again), a session really gone still 400."""
import pytest
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.models import Session
from django.db import OperationalError
from django.test import Client

from crowdbench.sessions import SessionStore

from ..annotation.factories import make_worker_user

pytestmark = pytest.mark.django_db


def fail_updates(monkeypatch, error):
    """Session rows can still be inserted; updating one fails with ``error``."""
    save = Session.save

    def save_or_fail(self, *args, force_update=False, **kwargs):
        if force_update:
            raise error
        return save(self, *args, force_update=force_update, **kwargs)

    monkeypatch.setattr(Session, "save", save_or_fail)


def test_the_session_engine_is_the_outage_aware_store(settings):
    assert settings.SESSION_ENGINE == "crowdbench.sessions"


def test_a_login_whose_session_write_meets_an_outage_answers_503_with_retry_after(monkeypatch):
    make_worker_user("outage-worker", password="work-pass-123")
    client = Client(raise_request_exception=False)
    fail_updates(monkeypatch, OperationalError("terminating connection due to administrator command"))

    response = client.post("/accounts/login/", {"username": "outage-worker", "password": "work-pass-123"})

    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"]
    assert b"briefly unavailable" in response.content


def test_an_update_that_meets_an_outage_raises_the_database_error(monkeypatch):
    store = SessionStore()
    store.create()
    store["seen"] = 1
    fail_updates(monkeypatch, OperationalError("server closed the connection unexpectedly"))
    with pytest.raises(OperationalError):
        store.save()


def test_a_session_deleted_meanwhile_is_still_an_update_error():
    store = SessionStore()
    store.create()
    Session.objects.filter(session_key=store.session_key).delete()
    store["seen"] = 1
    with pytest.raises(UpdateError):
        store.save()


def test_sessions_read_and_write_as_before():
    store = SessionStore()
    store["answer"] = 42
    store.save()
    assert SessionStore(store.session_key)["answer"] == 42
    assert Session.objects.filter(session_key=store.session_key).exists()
