"""The members page holds two forms (add a member, invite a researcher): every element id on it is
unique, and each form's labels name its own fields, whatever the page shows (the forms as they come,
a refused member form, a refused invitation)."""
from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from projects.models import Membership

pytestmark = pytest.mark.django_db


class _Ids(HTMLParser):
    """Every ``id`` attribute of a page, and for each form its labels' targets and its fields' ids."""

    def __init__(self):
        super().__init__()
        self.ids: list[str] = []
        self.forms: list[dict] = []
        self._form: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.append(attrs["id"])
        if tag == "form":
            self._form = {"id": attrs.get("id", ""), "action": attrs.get("action", ""), "labels": [], "fields": []}
            self.forms.append(self._form)
        elif self._form is not None and tag == "label" and attrs.get("for"):
            self._form["labels"].append(attrs["for"])
        elif self._form is not None and tag in ("input", "select", "textarea") and attrs.get("id"):
            self._form["fields"].append(attrs["id"])

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None


def parsed(response) -> _Ids:
    page = _Ids()
    page.feed(response.content.decode())
    return page


def assert_ids_unique_and_labels_in_their_form(response):
    page = parsed(response)
    repeated = {name: count for name, count in Counter(page.ids).items() if count > 1}
    assert not repeated, repeated
    forms_with_fields = [form for form in page.forms if form["fields"]]
    assert len(forms_with_fields) == 2
    for form in forms_with_fields:
        assert form["labels"] and set(form["labels"]) <= set(form["fields"]), form
    return page


def test_the_members_page_has_no_repeated_id_and_each_label_names_its_own_field(client, researcher, project):
    client.force_login(researcher)
    page = assert_ids_unique_and_labels_in_their_form(client.get(reverse("cockpit:members", args=[project.slug])))
    [invite] = [form for form in page.forms if form["id"] == "invite-form"]
    [member] = [form for form in page.forms if form["fields"] and form["id"] != "invite-form"]
    assert not set(invite["fields"]) & set(member["fields"])


def test_refused_forms_keep_ids_unique_and_the_posts_still_work(client, researcher, make_researcher, project):
    client.force_login(researcher)
    members = reverse("cockpit:members", args=[project.slug])
    refused = client.post(members, {"username": "nobody", "role": "collaborator"})
    assert refused.status_code == 400 and "No active user" in refused.content.decode()
    assert_ids_unique_and_labels_in_their_form(refused)
    invite = reverse("cockpit:member-invite", args=[project.slug])
    refused = client.post(invite, {"username": "bad name!", "role": "collaborator"})
    assert refused.status_code == 400
    assert_ids_unique_and_labels_in_their_form(refused)

    make_researcher("grace")
    assert client.post(members, {"username": "grace", "role": "collaborator"}).status_code == 302
    assert Membership.objects.get(project=project, user__username="grace").role == Membership.Role.COLLABORATOR
    made = client.post(invite, {"username": "rita", "role": "owner"})
    assert made.status_code == 200 and 'id="new-link"' in made.content.decode()
    assert_ids_unique_and_labels_in_their_form(made)
    assert Membership.objects.get(project=project, user__username="rita").role == Membership.Role.OWNER
