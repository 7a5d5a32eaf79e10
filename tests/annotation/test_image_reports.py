"""Workers report task images that do not load: once per worker and image, only images of their own
task, rate-limited, visible to researchers in the admin."""
import re

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from annotation.models import ImageReport
from annotation.services.engine import request_assignment
from annotation.services.workers import get_or_create_local_worker
from providers import services as provider_services
from providers.worker_access import task_token
from tests.annotation.factories import make_instance, make_outputs, make_review_set, make_round, make_worker_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


def pairwise_task(user):
    instance = make_instance(images=2)
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=instance))], workers_per_item=2)
    worker = get_or_create_local_worker(user=user)
    assignment = request_assignment(round=round, worker=worker)
    return assignment, [image.display_url for image in instance.ordered_images()]


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def report(client, assignment_id, image_url):
    return client.post(f"/api/work/assignments/{assignment_id}/report-image/", {"image_url": image_url},
                       content_type="application/json")


def test_report_is_stored_once_per_worker_and_image():
    user = make_worker_user()
    assignment, urls = pairwise_task(user)
    client = client_for(user)
    first = report(client, assignment.pk, urls[1])
    assert first.status_code == 201 and first.json() == {"reported": True, "created": True}
    again = report(client, assignment.pk, urls[1])
    assert again.status_code == 200 and again.json()["created"] is False
    stored = ImageReport.objects.get()
    assert (stored.worker.user, stored.item, stored.assignment, stored.image_url) == (
        user, assignment.item, assignment, urls[1])
    assert stored.reported_at is not None


def test_only_images_of_ones_own_task_can_be_reported():
    user, other = make_worker_user(), make_worker_user()
    assignment, urls = pairwise_task(user)
    client = client_for(user)
    not_shown = report(client, assignment.pk, "https://elsewhere.example.org/x.png")
    assert not_shown.status_code == 400 and "not part of your task" in not_shown.json()["detail"]
    assert report(client, assignment.pk, "").status_code == 400
    assert report(client, assignment.pk, "x" * 3000).status_code == 400
    assert client.post(f"/api/work/assignments/{assignment.pk}/report-image/", {"image_url": ["a"]},
                       content_type="application/json").status_code == 400
    for body in (["image_url", urls[0]], "just text", 42):
        assert client.post(f"/api/work/assignments/{assignment.pk}/report-image/", body,
                           content_type="application/json").status_code == 400
    assert report(client_for(other), assignment.pk, urls[0]).status_code == 404
    assert report(client, 999999, urls[0]).status_code == 404
    assert Client().post(f"/api/work/assignments/{assignment.pk}/report-image/", {"image_url": urls[0]},
                         content_type="application/json").status_code in (401, 403)
    outsider = User.objects.create_user("outsider", password="pw-123456789")
    assert report(client_for(outsider), assignment.pk, urls[0]).status_code == 403
    assert not ImageReport.objects.exists()


def test_ranking_image_can_be_reported():
    user = make_worker_user()
    review_set = make_review_set()
    round = make_round(task_type="ranking", targets=[review_set])
    assignment = request_assignment(round=round, worker=get_or_create_local_worker(user=user))
    assert report(client_for(user), assignment.pk, review_set.image.display_url).status_code == 201


def test_reports_are_rate_limited(settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS,
                            "image_report": {**settings.RATE_LIMITS["image_report"], "per_worker": "3/m"}}
    user = make_worker_user()
    assignment, urls = pairwise_task(user)
    client = client_for(user)
    for _ in range(3):
        assert report(client, assignment.pk, urls[0]).status_code in (200, 201)
    limited = report(client, assignment.pk, urls[1])
    assert limited.status_code == 429 and "Retry-After" in limited.headers
    assert ImageReport.objects.count() == 1


def test_reports_are_listed_for_researchers_in_the_admin():
    user = make_worker_user()
    assignment, urls = pairwise_task(user)
    report(client_for(user), assignment.pk, urls[0])
    admin = User.objects.create_superuser("boss", password="pw-123456789")
    page = client_for(admin).get("/admin/annotation/imagereport/")
    assert page.status_code == 200 and urls[0] in page.content.decode()


def test_provider_pages_report_with_their_task_token(settings):
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0  # the arrival check cannot reach the provider here: no pauses
    instance = make_instance()
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=instance))])
    worker = provider_services.get_or_create_provider_worker(provider="prolific", external_id="PID1")
    assignment = provider_services.request_provider_assignment(
        round=round, worker=worker, provider_assignment_id="S1", provider_task_id="T1")
    token = task_token(assignment=assignment)
    url = f"/api/providers/assignments/{assignment.pk}/report-image/"
    image_url = instance.ordered_images()[0].display_url
    refused = Client().post(url, {"image_url": image_url}, content_type="application/json", HTTP_X_TASK_TOKEN="bad")
    assert refused.status_code == 403
    stored = Client().post(url, {"image_url": image_url}, content_type="application/json", HTTP_X_TASK_TOKEN=token)
    assert stored.status_code == 201
    assert ImageReport.objects.get().worker == worker


def test_task_pages_carry_the_report_address():
    user = make_worker_user()
    assignment, _urls = pairwise_task(user)
    html = client_for(user).get(f"/work/rounds/{assignment.round_id}/").content.decode()
    assert re.search(rf'id="image-report"[^>]*data-url="/api/work/assignments/{assignment.pk}/report-image/"', html)
    assert "annotation/image_fallback.js" in html
