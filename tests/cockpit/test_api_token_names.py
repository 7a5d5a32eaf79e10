"""API tokens have names: given on the tokens page, listed there, and used to revoke one; the
secret is shown once, on the answer that made it."""
from __future__ import annotations

import pytest
from django.urls import reverse
from knox.models import AuthToken

from projects.models import ApiTokenName
from projects.tokens import create_token

pytestmark = pytest.mark.django_db

URL = reverse("cockpit:api-tokens")


def test_a_token_is_made_with_a_name_shown_in_the_list_and_its_secret_only_once(client, researcher):
    client.force_login(researcher)
    response = client.post(URL, {"create": "1", "name": "laptop scripts"})
    assert response.status_code == 200
    token = response.context["new_token"]
    page = response.content.decode()
    assert token in page and "laptop scripts" in page
    record = AuthToken.objects.get(user=researcher)
    assert ApiTokenName.objects.get(token=record).name == "laptop scripts"
    again = client.get(URL).content.decode()
    assert '<td class="token-name">laptop scripts</td>' in again and token not in again


@pytest.mark.parametrize("name, shown", [
    ("", "This field is required."),
    ("   ", "This field is required."),
    ("x" * 101, "at most 100 characters"),
    ("\u200b\u200b", "name is empty"),
    ("taken", "already have a token named"),
])
def test_a_bad_or_taken_name_is_refused_on_the_form_and_makes_no_token(client, researcher, name, shown):
    create_token(user=researcher, name="taken")
    client.force_login(researcher)
    response = client.post(URL, {"create": "1", "name": name})
    assert response.status_code == 400
    assert shown in response.content.decode()
    assert response.context["new_token"] is None
    assert AuthToken.objects.filter(user=researcher).count() == 1


def test_revoke_by_name_touches_only_that_token_of_the_researcher(client, researcher, make_researcher):
    create_token(user=researcher, name="CI")
    create_token(user=researcher, name="laptop")
    other = make_researcher("grace")
    create_token(user=other, name="CI")
    client.force_login(researcher)
    response = client.post(URL, {"revoke": "CI"})
    assert response.status_code == 302
    assert list(ApiTokenName.objects.filter(user=researcher).values_list("name", flat=True)) == ["laptop"]
    assert ApiTokenName.objects.filter(user=other, name="CI").exists()
    missing = client.post(URL, {"revoke": "CI"})
    assert missing.status_code == 404 and "No such token" in missing.content.decode()
    assert AuthToken.objects.count() == 2


def test_a_token_from_before_names_is_listed_and_revoked_by_its_first_characters(client, researcher):
    record, _token = AuthToken.objects.create(user=researcher)
    client.force_login(researcher)
    assert f'<td class="token-name">{record.token_key}</td>' in client.get(URL).content.decode()
    assert client.post(URL, {"revoke": record.token_key}).status_code == 302
    assert not AuthToken.objects.exists()
