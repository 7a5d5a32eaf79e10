"""Who may use each endpoint: anonymous 401, workers 403, non-members 404 (or an empty list),
collaborators read but get 403 on every write, owners read and write."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Assignment, CollectionRound, WorkItem
from datasets_app.models import Image, Instance, InstructionFamily, ModelOutput, ReviewSet
from projects.models import Release

pytestmark = pytest.mark.django_db


def detail_urls(world) -> list[str]:
    round = world["round"]
    return [
        "/api/projects/study-a/",
        f"/api/families/{InstructionFamily.objects.filter(project=world['project']).first().pk}/",
        f"/api/instances/{Instance.objects.filter(family__project=world['project']).first().pk}/",
        f"/api/images/{Image.objects.filter(instances__family__project=world['project']).first().pk}/",
        f"/api/review-sets/{ReviewSet.objects.filter(project=world['project']).first().pk}/",
        f"/api/model-outputs/{ModelOutput.objects.first().pk}/",
        f"/api/rounds/{round.pk}/",
        f"/api/items/{WorkItem.objects.filter(round=round).first().pk}/",
        f"/api/submissions/{Assignment.objects.filter(round=round).first().pk}/",
        f"/api/releases/{world['release'].pk}/",
        f"/api/releases/{world['release'].pk}/files/SHA256SUMS",
        "/api/evaluations/ratings/?project=study-a",
    ]


LIST_URLS = ["/api/projects/", "/api/families/", "/api/instances/", "/api/images/", "/api/review-sets/",
             "/api/model-outputs/", "/api/rounds/", "/api/items/", "/api/submissions/", "/api/releases/"]


def writes(world, tmp_path) -> list[tuple[str, dict, str]]:
    round = world["round"]
    output = ModelOutput.objects.first()
    csv_file = tmp_path / "p.csv"
    csv_file.write_text("instruction,image,m prediction\nx,https://img.example.org/x.jpg,y\n")
    return [
        ("/api/rounds/", {"project": "study-a", "name": "R", "task_type": "pairwise"}, "json"),
        (f"/api/rounds/{round.pk}/add-items/", {"items": [{"output_a": output.pk, "output_b": output.pk}]}, "json"),
        (f"/api/rounds/{round.pk}/add-items-from-source/", {"source": "model_outputs"}, "json"),
        (f"/api/rounds/{round.pk}/close/", {}, "json"),
        (f"/api/rounds/{round.pk}/open/", {}, "json"),
        (f"/api/rounds/{round.pk}/publish/", {"provider": "local"}, "json"),
        ("/api/submissions/review/", {"ids": [Assignment.objects.first().pk], "decision": "approve"}, "json"),
        ("/api/model-outputs/upload/", {"project": "study-a", "file": csv_file}, "multipart"),
        ("/api/releases/", {"project": "study-a", "name": "x", "version": "9"}, "json"),
    ]


def post(client, url, data, fmt):
    if fmt == "multipart":
        with open(data["file"], "rb") as handle:
            return client.post(url, {**data, "file": handle}, format="multipart")
    return client.post(url, data, format=fmt)


def state():
    return (CollectionRound.objects.count(), list(CollectionRound.objects.values_list("status", flat=True)),
            WorkItem.objects.count(), Release.objects.count(), ModelOutput.objects.count(),
            list(Assignment.objects.values_list("review_status", flat=True)))


def test_anonymous_requests_get_401_everywhere(world, tmp_path):
    anonymous = APIClient()
    for url in [*LIST_URLS, *detail_urls(world)]:
        response = anonymous.get(url)
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"] == "Token"
    assert_writes_refused(anonymous, world, tmp_path, 401)


def test_a_bad_or_revoked_token_gets_401(world, researcher):
    from projects.tokens import create_token, revoke_token

    record, token = create_token(user=researcher)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/projects/").status_code == 200
    revoke_token(user=researcher, token_key=record.token_key)
    assert client.get("/api/projects/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Token " + "x" * 64)
    assert client.get("/api/projects/").status_code == 401


def assert_writes_refused(client, world, tmp_path, status_code: int) -> None:
    """Every write answers ``status_code`` with a message, and nothing changes."""
    before = state()
    for url, data, fmt in writes(world, tmp_path):
        response = post(client, url, data, fmt)
        assert response.status_code == status_code, url
        assert response.json()["detail"], url
    assert state() == before


def test_workers_get_403_on_every_researcher_endpoint(world, worker_api, tmp_path):
    for url in [*LIST_URLS, *detail_urls(world)]:
        response = worker_api.get(url)
        assert response.status_code == 403, url
        assert "Only researchers" in response.json()["detail"]
    assert_writes_refused(worker_api, world, tmp_path, 403)


def test_non_members_see_nothing_and_get_404(world, outsider_api, tmp_path):
    for url in LIST_URLS:
        response = outsider_api.get(url)
        assert response.status_code == 200 and response.json()["count"] == 0, url
    for url in detail_urls(world):
        assert outsider_api.get(url).status_code == 404, url
    assert outsider_api.get("/api/evaluations/irr-report/?project=study-a").status_code == 404
    assert_writes_refused(outsider_api, world, tmp_path, 404)


def test_collaborators_read_everything_and_get_403_on_writes(world, collaborator_api, tmp_path):
    for url in LIST_URLS:
        response = collaborator_api.get(url)
        assert response.status_code == 200 and response.json()["count"] >= 1, url
    for url in detail_urls(world):
        assert collaborator_api.get(url).status_code == 200, url
    assert_writes_refused(collaborator_api, world, tmp_path, 403)


def test_session_authentication_works_for_researchers_and_needs_csrf_for_writes(world, researcher):
    from tests.cockpit.conftest import PASSWORD

    browser = APIClient(enforce_csrf_checks=True)
    assert browser.login(username=researcher.username, password=PASSWORD)
    assert browser.get("/api/rounds/").json()["count"] == 1
    refused = browser.post(f"/api/rounds/{world['round'].pk}/close/")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    assert CollectionRound.objects.get(pk=world["round"].pk).status == "complete"  # the judged round, unchanged


def test_the_api_root_answers_a_token_like_every_endpoint(world, researcher, worker_api):
    from projects.tokens import create_token

    _record, token = create_token(user=researcher)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get("/api/")
    assert response.status_code == 200
    assert "projects" in response.json()
    assert APIClient().get("/api/").status_code == 401
    assert worker_api.get("/api/").status_code == 403
