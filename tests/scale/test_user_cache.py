"""A worker's user, group membership and worker record come from the shared cache (Redis), and a
change made by a service is seen on the very next request: the version the cached copy is checked
against is replaced when the change commits (``annotation.auth``)."""
import pickle
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.services.workers import get_or_create_local_worker, set_worker_languages
from providers.services import block_worker

from ..annotation.factories import make_instance, make_outputs, make_round, make_worker_user

# transaction=True: the version is replaced when the change commits, as in production.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.database_sensitive]

PASSWORD = "work-pass-123"


@pytest.fixture
def user_cache(settings, redis_server):
    """Redis as the default and the sessions' cache, the user cache on: as ``CACHE_URL`` sets it up."""
    redis_cache = {"BACKEND": "crowdbench.cache.ResilientRedisCache", "LOCATION": redis_server.url(3)}
    settings.CACHES = {"default": redis_cache,
                       "sessions": {**redis_cache, "BACKEND": "crowdbench.cache.SessionRedisCache"}}
    settings.USER_CACHE_SECONDS = 300
    yield
    cache.clear()


def pairwise_round(items: int = 3):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(items)]
    return make_round(task_type="pairwise", targets=pairs)


def logged_in_worker():
    user = make_worker_user(password=PASSWORD)
    get_or_create_local_worker(user=user)
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return user, client


def next_task(client, round):
    return client.post(reverse("annotation-api:next", args=[round.pk]))


def user_reads(queries) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if 'FROM "auth_user"' in query["sql"]]


def test_a_workers_requests_read_the_user_from_the_cache(user_cache):
    round = pairwise_round()
    _user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert next_task(client, round).status_code == 200
    assert user_reads(queries) == []


def test_a_blocked_worker_is_refused_on_the_request_right_after_the_block(user_cache):
    round = pairwise_round()
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200  # the worker is cached now
    block_worker(worker=user.crowd_worker, reason="Copied answers between tasks.")
    refused = next_task(client, round)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Your account may not take tasks."
    page = client.get(reverse("annotation:round", args=[round.pk]))
    assert page.status_code == 403


def test_without_the_version_replaced_the_cached_worker_would_still_be_served(user_cache):
    """What the test above holds against: the cache is really in the way."""
    round = pairwise_round()
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200
    with mock.patch("annotation.services.workers.forget_cached_user"):
        block_worker(worker=user.crowd_worker, reason="Copied answers between tasks.")
    assert next_task(client, round).status_code == 200


def test_a_password_change_still_ends_the_other_sessions(user_cache):
    round = pairwise_round()
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200
    user = User.objects.get(pk=user.pk)
    user.set_password("a-new-pass-456")
    user.save()
    assert next_task(client, round).status_code == 403
    page = client.get(reverse("annotation:round", args=[round.pk]))
    assert page.status_code == 302 and "login" in page["Location"]


def test_changed_languages_are_seen_on_the_next_request(user_cache):
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))],
                       language="ja", qualification_rules={"language_matched": True})
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 403
    set_worker_languages(worker=user.crowd_worker, languages=["en", "ja"])
    assert next_task(client, round).status_code == 200


def test_researchers_and_staff_are_read_on_every_request(user_cache):
    staff = User.objects.create_user(username="staff", password=PASSWORD, is_staff=True)
    client = Client()
    assert client.login(username="staff", password=PASSWORD)
    client.get(reverse("annotation:work-list"))
    with CaptureQueriesContext(connection) as queries:
        client.get(reverse("annotation:work-list"))
    assert len(user_reads(queries)) == 1
    assert cache.get(f"auth:user:{staff.pk}") is None


def test_the_cache_holds_no_password_hash(user_cache):
    round = pairwise_round()
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200
    version, cached_user, session_hash = cache.get(f"auth:user:{user.pk}")
    assert cached_user.pk == user.pk and "password" in cached_user.get_deferred_fields()
    assert user.password.encode() not in pickle.dumps(cache.get(f"auth:user:{user.pk}"))
    assert session_hash == User.objects.get(pk=user.pk).get_session_auth_hash()
    # Served from the cache, the session still checks out.
    assert next_task(client, round).status_code == 200


def test_a_worker_who_changes_their_password_stays_signed_in(user_cache):
    round = pairwise_round()
    user, client = logged_in_worker()
    assert next_task(client, round).status_code == 200
    assert next_task(client, round).status_code == 200  # the user now comes from the cache
    changed = client.post(reverse("password_change"), {
        "old_password": PASSWORD, "new_password1": "a-new-pass-456", "new_password2": "a-new-pass-456"})
    assert changed.status_code == 302, changed.content[:500]
    assert User.objects.get(pk=user.pk).check_password("a-new-pass-456")
    assert next_task(client, round).status_code == 200
    assert Client().login(username=user.username, password="a-new-pass-456")
