"""The API's own token endpoint: named tokens, listed without their secret, revoked by name."""
from __future__ import annotations

import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

from projects.models import ApiTokenName

from .conftest import token_client

pytestmark = pytest.mark.django_db


def test_create_list_use_and_revoke_a_named_token(researcher):
    session = APIClient()
    session.force_login(researcher)
    created = session.post("/api/tokens/", {"name": "nightly CI"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "nightly CI" and body["token"].startswith(body["token_key"])
    listed = session.get("/api/tokens/").json()
    assert [row["name"] for row in listed] == ["nightly CI"] and "token" not in listed[0]
    assert body["token"] not in str(listed)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    assert api.get("/api/projects/").status_code == 200
    assert session.delete("/api/tokens/nightly%20CI/").status_code == 204
    assert api.get("/api/projects/").status_code == 401
    assert session.delete("/api/tokens/nightly%20CI/").status_code == 404


def test_an_unnamed_token_is_named_by_its_first_characters(researcher):
    api = token_client(researcher)
    created = api.post("/api/tokens/", {}, format="json")
    assert created.status_code == 201 and created.json()["name"] == created.json()["token_key"]


@pytest.mark.parametrize("name", ["", "x" * 101, "a\x00b", "taken"])
def test_bad_or_taken_names_are_refused_and_make_nothing(researcher, name):
    api = token_client(researcher)
    api.post("/api/tokens/", {"name": "taken"}, format="json")
    before = AuthToken.objects.count()
    response = api.post("/api/tokens/", {"name": name}, format="json")
    assert response.status_code == 400
    assert AuthToken.objects.count() == before


def test_tokens_are_each_researchers_own(researcher, make_researcher, worker_api):
    mine = token_client(researcher)
    mine.post("/api/tokens/", {"name": "shared-name"}, format="json")
    theirs = token_client(make_researcher("grace"))
    assert [row["name"] for row in theirs.get("/api/tokens/").json()] == [
        ApiTokenName.objects.get(user__username="grace").name]
    assert theirs.delete("/api/tokens/shared-name/").status_code == 404
    assert ApiTokenName.objects.filter(user=researcher, name="shared-name").exists()
    assert worker_api.get("/api/tokens/").status_code == 403
    assert APIClient().get("/api/tokens/").status_code == 401
