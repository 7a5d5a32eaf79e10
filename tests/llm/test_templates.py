"""Prompt templates: versions, rendering, and edits in the admin."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.urls import reverse

from llm.calls import RenderedPrompt
from llm.models import PromptTemplate, TemplateRenderError
from llm.services import create_template_version, ensure_template, render_template

# Database behaviour (a unique constraint (IntegrityError)): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


def test_versions_count_up_per_name():
    first = create_template_version(name="judge", text="A: {a}")
    second = create_template_version(name="judge", text="A: {a}!")
    other = create_template_version(name="review", text="{image}")
    assert (first.version, second.version, other.version) == (1, 2, 1)
    assert PromptTemplate.objects.latest_version("judge") == second


def test_name_and_version_are_unique():
    create_template_version(name="judge", text="x")
    with pytest.raises(IntegrityError):
        PromptTemplate.objects.create(name="judge", version=1, text="y")


def test_latest_version_of_an_unknown_name():
    with pytest.raises(PromptTemplate.DoesNotExist, match="no prompt template named 'nope'"):
        PromptTemplate.objects.latest_version("nope")


def test_render_fills_placeholders_and_keeps_other_braces():
    template = create_template_version(
        name="judge",
        text='Caption: {caption}\nAnswer as JSON like {"winner": "A"}; {{caption}} is literal.',
    )
    assert template.placeholders == ["caption"]
    assert template.render(caption="a cat") == (
        'Caption: a cat\nAnswer as JSON like {"winner": "A"}; {caption} is literal.'
    )
    with pytest.raises(TemplateRenderError, match="caption"):
        template.render()


def test_render_template_remembers_the_version():
    create_template_version(name="ref", text="v1 {x}")
    create_template_version(name="ref", text="v2 {x}")
    assert render_template("ref", x=1) == RenderedPrompt("v2 1", "ref", 2)
    assert render_template("ref", 1, x=1) == RenderedPrompt("v1 1", "ref", 1)


def test_ensure_template_adds_a_version_only_when_the_text_changes():
    first = ensure_template(name="ref", text="Consider {caption}")
    assert ensure_template(name="ref", text="Consider {caption}") == first
    changed = ensure_template(name="ref", text="Look at {caption}")
    assert changed.version == 2
    assert ensure_template(name="ref", text="Look at {caption}") == changed


def test_editing_in_the_admin_saves_a_new_version(client):
    user = get_user_model().objects.create_superuser("admin", "admin@example.org", "pw")
    client.force_login(user)
    template = create_template_version(name="ref", text="old {caption}")
    url = reverse("admin:llm_prompttemplate_change", args=[template.pk])
    response = client.post(url, {"text": "new {caption}", "description": ""})
    assert response.status_code == 302
    versions = list(PromptTemplate.objects.filter(name="ref").order_by("version").values_list("version", "text"))
    assert versions == [(1, "old {caption}"), (2, "new {caption}")]

    add = client.post(reverse("admin:llm_prompttemplate_add"), {"name": "ref", "text": "newer", "description": ""})
    assert add.status_code == 302
    assert PromptTemplate.objects.latest_version("ref").version == 3


def test_calls_are_read_only_in_the_admin(client):
    user = get_user_model().objects.create_superuser("admin", "admin@example.org", "pw")
    client.force_login(user)
    assert client.get(reverse("admin:llm_llmcall_changelist")).status_code == 200
    assert client.get(reverse("admin:llm_llmcall_add")).status_code == 403
