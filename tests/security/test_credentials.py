"""Every credential check counts against one limiter: no API scheme checks a password outside it
(HTTP Basic is not accepted), failed API tokens are counted with the sign-in forms, and a user
name tried from one address cannot lock its owner out from another."""
from __future__ import annotations

import base64

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authentication import SessionAuthentication
from rest_framework.test import APIClient

from api.credentials import CountedTokenAuthentication
from api.leaderboard import SubmissionTokenAuthentication
from projects.tokens import create_token
from tests.annotation.factories import make_worker_user
from tests.cockpit.conftest import make_researcher  # noqa: F401  (fixture)

from .test_rate_limits import with_rates

pytestmark = pytest.mark.django_db

ATTACKER, VICTIM = "203.0.113.9", "198.51.100.20"


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_http_basic_credentials_make_no_difference_to_any_api_view_so_no_password_is_guessed_outside_the_limiter(
        settings, make_researcher):
    with_rates(settings, "login", per_address="1000/h", per_worker="1000/h")
    researcher = make_researcher("alice")
    researcher.set_password("right-pass-123")
    researcher.save()
    worker = make_worker_user("walter", password="walter-pass-123")
    client = APIClient(REMOTE_ADDR=ATTACKER)
    for path, user, password in (("/api/schema/", researcher, "right-pass-123"),
                                 ("/api/projects/", researcher, "right-pass-123"),
                                 (reverse("annotation-api:next", args=[1]), worker, "walter-pass-123")):
        # The schema is public; the others refuse anonymous clients. Either way the password tried,
        # right or wrong, changes nothing: there is nothing to learn from guessing.
        anonymous = client.get(path).status_code
        wrong = {client.get(path, HTTP_AUTHORIZATION=basic(user.username, f"wrong-{n}")).status_code
                 for n in range(3)}
        right = client.get(path, HTTP_AUTHORIZATION=basic(user.username, password)).status_code
        assert wrong == {anonymous} and right == anonymous, (path, anonymous, wrong, right)
    assert client.get("/api/projects/").status_code in (401, 403)


def test_wrong_api_tokens_are_cut_off_by_the_sign_in_limiter_per_address(settings, make_researcher):
    with_rates(settings, "login", per_address="5/h")
    _record, token = create_token(user=make_researcher("alice"))
    attacker = APIClient(REMOTE_ADDR=ATTACKER)
    codes = [attacker.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {n:064x}").status_code for n in range(6)]
    assert codes == [401] * 5 + [429]
    refused = attacker.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token}")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "sign-in attempts" in refused.json()["detail"]
    # The same token from another address works, and a valid token is not an attempt.
    elsewhere = APIClient(REMOTE_ADDR=VICTIM)
    assert {elsewhere.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token}").status_code
            for _ in range(8)} == {200}


def test_wrong_submission_tokens_count_against_the_same_limiter(settings, make_researcher):
    with_rates(settings, "login", per_address="3/h")
    attacker = APIClient(REMOTE_ADDR=ATTACKER)
    path = "/api/leaderboard/some-project/submissions/"
    codes = [attacker.get(path, HTTP_AUTHORIZATION=f"Token cbsub_guess{n}").status_code for n in range(4)]
    assert codes[:3] == [401] * 3 and codes[3] == 429


def test_failed_tokens_and_sign_in_forms_share_one_counter(settings, make_researcher):
    with_rates(settings, "login", per_address="4/h", per_worker="100/h")
    make_worker_user("alice", password="right-pass-123")
    api = APIClient(REMOTE_ADDR=ATTACKER)
    assert [api.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {n:064x}").status_code
            for n in range(2)] == [401, 401]
    form = Client(REMOTE_ADDR=ATTACKER)
    codes = [form.post(reverse("login"), {"username": "alice", "password": f"wrong-{n}"}).status_code
             for n in range(3)]
    assert codes == [200, 200, 429]


def test_wrong_passwords_with_a_victims_user_name_do_not_lock_the_victim_out_from_elsewhere(settings):
    with_rates(settings, "login", per_worker="10/h", per_address="100/h")
    make_worker_user("victim", password="victim-pass-123")
    attacker = Client(REMOTE_ADDR=ATTACKER)
    codes = [attacker.post(reverse("login"), {"username": "victim", "password": f"guess-{n}"}).status_code
             for n in range(11)]
    assert codes == [200] * 10 + [429]
    # The attacker's address stays cut off from this account, the right password included.
    assert attacker.post(reverse("login"), {"username": "victim", "password": "victim-pass-123"}).status_code == 429
    victim = Client(REMOTE_ADDR=VICTIM)
    assert victim.post(reverse("login"), {"username": "victim", "password": "victim-pass-123"}).status_code == 302


def test_changing_a_password_is_a_counted_sign_in_attempt(settings):
    with_rates(settings, "login", per_worker="3/h", per_address="100/h")
    user = make_worker_user("walter", password="walter-pass-123")
    client = Client()
    client.force_login(user)
    codes = [client.post(reverse("password_change"), {"old_password": f"guess-{n}", "new_password1": "N3w-pass-9876",
                                                      "new_password2": "N3w-pass-9876"}).status_code
             for n in range(4)]
    assert codes == [200] * 3 + [429]


def _views(resolver=None):
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern)
        elif isinstance(pattern, URLPattern):
            yield pattern


def test_every_api_view_authenticates_only_by_schemes_the_limiter_counts():
    allowed = {CountedTokenAuthentication, SessionAuthentication, SubmissionTokenAuthentication}
    checked = 0
    for pattern in _views():
        view = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
        classes = getattr(view, "authentication_classes", None)
        if classes is None:
            continue
        checked += 1
        # An empty list is a provider page's signed task token, checked by its view.
        assert set(classes) <= allowed, (pattern.pattern, classes)
    assert checked > 20
