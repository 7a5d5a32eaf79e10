"""Submissions go through each task type's form: refusals name their fields (400 with ``errors``),
and hostile bodies are refused like any bad input, never a 500."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import Assignment

from .factories import make_candidate, make_instance, make_outputs, make_review_set, make_round, make_worker_user

pytestmark = pytest.mark.django_db


def take(client, round) -> dict:
    client.force_login(make_worker_user())
    return client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]


def post(client, assignment, body, **extra):
    return client.post(assignment["submit_url"], body if isinstance(body, str) else json.dumps(body),
                       content_type="application/json", **extra)


@pytest.mark.parametrize(
    "task_type, targets, body, field",
    [
        ("verification", lambda: [make_candidate()], {"outcome": "maybe"}, "outcome"),
        ("verification", lambda: [make_candidate()], {"outcome": "correct", "harmful": "perhaps"}, "harmful"),
        ("verification", lambda: [make_candidate()], {"outcome": "correct", "comment": {"nested": 1}}, "comment"),
        ("pairwise", lambda: [tuple(make_outputs(instance=make_instance()))], {"choice": ["left"]}, "choice"),
        ("caption", lambda: [make_instance(images=2, captions=False)], {"captions": ["one", 2]}, "captions"),
        ("caption", lambda: [make_instance(captions=False)], {"captions": "not a list"}, "captions"),
        ("ranking", lambda: [make_review_set()], {"order": [1, 2]}, "order"),
    ],
)
def test_refusals_name_the_field(client, task_type, targets, body, field):
    round = make_round(task_type=task_type, targets=targets())
    assignment = take(client, round)
    response = post(client, assignment, body)
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field] and response.json()["detail"]
    assert Assignment.objects.get(pk=assignment["id"]).status == Assignment.Status.ASSIGNED


def test_a_caption_refusal_names_the_image(client):
    round = make_round(task_type="caption", targets=[make_instance(images=2, captions=False)])
    response = post(client, take(client, round), {"captions": ["A red square.", "   "]})
    assert response.json()["errors"] == {"captions": ["The caption of image 2 is empty."]}


@pytest.mark.parametrize(
    "body",
    [
        "[1, 2, 3]",                                   # not an object
        json.dumps({"outcome": "correct\x00", "comment": "x"}),  # control character in a choice
        json.dumps({"outcome": "correct", "comment": "bad\x00text"}),
        "{" * 5000 + "}" * 5000,                       # deeply nested
        json.dumps({"outcome": {"a": [[[[{"b": 1}]]]]}}),
    ],
)
def test_hostile_bodies_are_refused_cleanly(client, body):
    round = make_round(task_type="verification", targets=[make_candidate()])
    response = post(client, take(client, round), body)
    assert response.status_code == 400, response.content[:200]
    assert "detail" in response.json()
