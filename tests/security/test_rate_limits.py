"""Rate limits on sign-in, task requests and submissions: 429 with a message past the limit."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment
from providers import services as provider_services
from providers.worker_access import task_token
from tests.annotation.factories import make_candidate, make_instance, make_round, make_worker_user

pytestmark = pytest.mark.django_db


def with_rates(settings, group, **rates):
    # Hourly windows: a test (a few seconds) almost never straddles the start of a new window, where counts restart.
    limits = {name: dict(rule) for name, rule in settings.RATE_LIMITS.items()}
    limits[group].update(rates)
    settings.RATE_LIMITS = limits


def test_wrong_passwords_are_cut_off_per_user_name(settings):
    with_rates(settings, "login", per_worker="5/h", per_address="100/h")
    make_worker_user("alice", password="right-pass-123")
    client = Client()
    codes = [client.post(reverse("login"), {"username": "alice", "password": f"wrong-{n}"}).status_code
             for n in range(6)]
    assert codes == [200] * 5 + [429]
    response = client.post(reverse("login"), {"username": "ALICE", "password": "right-pass-123"})
    assert response.status_code == 429  # the right password too, for this user name, until the window ends
    assert b"Too many requests (sign-in attempts)" in response.content
    assert int(response["Retry-After"]) >= 1
    assert "_auth_user_id" not in client.session
    # Another user name from the same address still gets through.
    make_worker_user("bob", password="bob-pass-123")
    assert client.post(reverse("login"), {"username": "bob", "password": "bob-pass-123"}).status_code == 302


def test_sign_in_attempts_are_cut_off_per_address_across_user_names(settings):
    with_rates(settings, "login", per_worker="100/h", per_address="8/h")
    client = Client()
    codes = [client.post(reverse("login"), {"username": f"user{n}", "password": "x"}).status_code for n in range(9)]
    assert codes == [200] * 8 + [429]
    assert Client(REMOTE_ADDR="198.51.100.7").post(
        reverse("login"), {"username": "user1", "password": "x"}).status_code == 200
    assert client.get(reverse("login")).status_code == 200  # showing the form is not an attempt


def test_the_admin_sign_in_is_limited_too(settings):
    with_rates(settings, "login", per_worker="2/h")
    client = Client()
    codes = [client.post(reverse("admin:login"), {"username": "root", "password": "x"}).status_code for _ in range(3)]
    assert codes[-1] == 429 and 429 not in codes[:2]


def test_task_requests_are_limited_per_worker(settings):
    with_rates(settings, "task_request", per_worker="3/h")
    round = make_round(task_type="caption", targets=[make_instance() for _ in range(2)])
    client = APIClient()
    client.force_login(make_worker_user())
    codes = [client.post(reverse("annotation-api:next", args=[round.pk])).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    other = APIClient()
    other.force_login(make_worker_user())
    assert other.post(reverse("annotation-api:next", args=[round.pk])).status_code == 200
    response = client.get(reverse("annotation:round", args=[round.pk]))  # the page counts as a request too
    assert response.status_code == 429 and b"task requests" in response.content


def test_submissions_are_limited_per_worker_and_per_address(settings):
    with_rates(settings, "submission", per_worker="2/h", per_address="3/h")
    round = make_round(task_type="caption", targets=[make_instance()])
    client = APIClient()
    client.force_login(make_worker_user())
    assignment_id = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]["id"]
    url = reverse("annotation-api:submit", args=[assignment_id])
    codes = [client.post(url, {"captions": [""]}, format="json").status_code for _ in range(3)]
    assert codes == [400, 400, 429]
    response = client.post(url, {"captions": ["A cat."]}, format="json")
    assert response.status_code == 429 and "submissions" in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.ASSIGNED
    # A second worker at the same address uses up what is left of the address's allowance.
    other = APIClient()
    other.force_login(make_worker_user())
    assert other.post(url, {"captions": ["x"]}, format="json").status_code == 429


def test_provider_submissions_are_limited_per_task_token(settings):
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0  # the arrival check cannot reach the provider here: no pauses
    with_rates(settings, "submission", per_worker="2/h")
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker = provider_services.get_or_create_provider_worker(provider="mturk", external_id="AWORKER7")
    assignment = provider_services.request_provider_assignment(
        round=round, worker=worker, provider_assignment_id="ASSIGN7", provider_task_id="HIT7")
    url = reverse("providers-api:submit", args=[assignment.pk])
    token = {"X-Task-Token": task_token(assignment=assignment)}
    codes = [Client().post(url, {"outcome": "nonsense"}, headers=token).status_code for _ in range(3)]
    assert codes == [400, 400, 429]


def test_each_providers_worker_pages_are_limited_as_the_provider_declares(settings):
    """The providers' own pages (``CrowdProvider.rate_limited_views``) count as task requests: no
    setting names them, and each declared name is a mounted page."""
    from providers.registry import rate_limited_views

    declared = rate_limited_views()
    assert {view for _group, view in declared} >= {"providers:mturk:task", "providers:prolific:task"}
    with_rates(settings, "task_request", per_address="2/h")
    for number, (group, view) in enumerate(declared):
        assert group in settings.RATE_LIMITS
        client = Client(REMOTE_ADDR=f"198.51.100.{10 + number}")  # an address of its own per page
        url = reverse(view, args=[10**6])  # no such round: refused by the page, counted all the same
        assert [client.get(url).status_code for _ in range(3)] == [404, 404, 429], view
