"""Hostile input gets a 4xx with a message on every endpoint, anonymous ones included, and changes nothing."""
from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment
from datasets_app.models import Caption
from kernel.input_checks import HostileInput, is_blank, json_depth, load_json, parse_json, strict_int, text_problem
from providers import services as provider_services
from providers.worker_access import task_token
from tests.annotation.factories import make_candidate, make_instance, make_review_set, make_round, make_worker_user

# Database behaviour (text PostgreSQL refuses (NUL) must never reach it; refusals write nothing): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_TEXTS = {
    "nul": "a caption\x00with NUL",
    "lone surrogate": "a caption \ud800 broken",
    "control character": "a caption \x1b[31m red",
    "C1 control": "a caption \x85 next line",
    "zero-width only": "\u200b\u200b\u2060\ufeff",
}


def raw_json(value) -> str:
    # ensure_ascii escapes a lone surrogate as \ud800, as a hostile client would send it
    return json.dumps(value, ensure_ascii=True)


def worker_client():
    client = APIClient()
    client.force_login(make_worker_user())
    return client


def open_caption_task(client):
    round = make_round(task_type="caption", targets=[make_instance()])
    response = client.post(reverse("annotation-api:next", args=[round.pk]))
    assert response.status_code == 200
    return response.json()["assignment"]["id"]


def submit_raw(client, assignment_id, body: str, content_type="application/json"):
    return client.generic("POST", reverse("annotation-api:submit", args=[assignment_id]), body,
                          content_type=content_type)


# --- the pure checks ---------------------------------------------------------------------------


def test_text_problem_names_the_character_and_keeps_ordinary_text():
    assert "NUL" in text_problem("a\x00b")
    assert "surrogate" in text_problem("a\udfffb")
    assert "U+001B" in text_problem("\x1b")
    assert "U+0085" in text_problem("x\x85")
    assert text_problem("line one\nline two\r\n\ttabbed — 日本語 😀 e\u0301 \u200d") is None
    assert "line break" in text_problem("one\ntwo", multiline=False)
    assert is_blank("\u200b \u2060\ufeff\n") and not is_blank("\u200ba")


@pytest.mark.parametrize("value, form, expected", [
    (3, False, 3), (3.9, False, None), (3.0, False, None), ("3", False, None), (True, False, None),
    ("3", True, 3), ("+3", True, None), (" 3", True, None), ("٣", True, None), ("9" * 40, True, None),
])
def test_strict_int_refuses_what_is_not_an_integer(value, form, expected):
    assert strict_int(value, allow_digit_strings=form) == expected


def test_json_nesting_is_bounded_and_brackets_in_strings_do_not_count():
    assert json_depth(parse_json('{"a": "[[[[[[", "b": [1, {"c": "\\"]]]"}]}')) == 3
    assert json_depth(parse_json("[" * 20 + "]" * 20)) == 20
    for deep in (DEEP, "[" * 21 + "]" * 21, '{"a":' * 500 + "1" + "}" * 500):
        with pytest.raises(HostileInput, match="nested more than 20 levels"):
            load_json(deep)
    with pytest.raises(HostileInput, match="NaN is not accepted"):
        load_json('{"x": NaN}')
    assert parse_json('[NaN]', allow_nan=True)


def test_json_numbers_are_bounded_and_the_member_at_fault_is_named():
    """#26 item 6: a 100,000-digit number made Python's int() raise past its 4,300-digit limit."""
    cases = [
        ('{"a": 1, "multi_image": 1' + "0" * 99_999 + "}", "multi_image", "a number in the JSON has more than 50"),
        ('{"score": 1e999}', "score", "a number in the JSON is too large (1e999)"),
        ('{"a": "ok", "text": ["\\ud800"]}', "text", "a text in the JSON contains a lone surrogate"),
        ('{"a": 1, "deep": ' + DEEP + "}", "deep", "nested more than 20 levels"),
        ('{"a": 1, "b\\"": "]]", "deep": ' + "[" * 20 + "]" * 20 + "}", "deep", "nested more than 20 levels"),
        ("[1, " + "9" * 100_000 + "]", None, "a number in the JSON has more than 50"),
    ]
    for raw, field, message in cases:
        with pytest.raises(HostileInput, match=re.escape(message)) as refused:
            parse_json(raw)
        assert refused.value.field == field, raw[:80]
    assert parse_json('{"n": ' + "9" * 50 + ', "x": 2.5e10}') == {"n": int("9" * 50), "x": 2.5e10}
    assert parse_json("[1e999]", allow_nan=True) == [float("inf")]


# --- the worker API ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", HOSTILE_TEXTS)
def test_worker_api_refuses_hostile_caption_text(kind):
    client = worker_client()
    assignment_id = open_caption_task(client)
    response = submit_raw(client, assignment_id, raw_json({"captions": [HOSTILE_TEXTS[kind]]}))
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail and ("empty" in detail if kind == "zero-width only" else "contains" in detail)
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.ASSIGNED
    assert not Caption.objects.filter(source="crowd").exists()


def test_worker_api_refuses_hostile_text_sent_as_a_form():
    client = worker_client()
    assignment_id = open_caption_task(client)
    response = client.post(reverse("annotation-api:submit", args=[assignment_id]),
                           {"captions": "bad\x00caption"}, format="multipart")
    assert response.status_code == 400
    assert "NUL" in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.ASSIGNED


@pytest.mark.parametrize("body, message", [
    (DEEP, "nested more than"),
    ('{"captions": ["ok"], "x": NaN}', "NaN is not accepted"),
    ('{"captions": ["ok"], "\\u0000": 1}', "a key in the JSON contains a NUL"),
    ('{"captions": ["ok"', "invalid JSON"),
    (b'{"captions": ["\xff"]}', "not UTF-8"),
])
def test_worker_api_refuses_malformed_json(body, message):
    client = worker_client()
    assignment_id = open_caption_task(client)
    response = submit_raw(client, assignment_id, body)
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.ASSIGNED


def test_huge_bodies_are_refused_before_they_are_read(settings):
    client = worker_client()
    assignment_id = open_caption_task(client)
    caption = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
    response = submit_raw(client, assignment_id, raw_json({"captions": [caption]}))
    assert response.status_code == 400
    assert "larger than 1 MB" in response.json()["detail"]
    settings.MAX_REQUEST_BODY_BYTES = 1000
    response = submit_raw(client, assignment_id, raw_json({"captions": ["y" * 2000]}))
    assert response.status_code == 413
    assert "larger than" in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.ASSIGNED


@pytest.mark.parametrize("order_of", [
    lambda ids: [ids[0] + 0.9] + ids[1:],              # 3.9 where 3 is an id
    lambda ids: [str(ids[0])] + ids[1:],               # "3" in JSON
    lambda ids: [True] + ids[1:],
])
def test_ranking_ids_must_be_integers(order_of):
    client = worker_client()
    round = make_round(task_type="ranking", targets=[make_review_set()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    ids = [review["id"] for review in assignment["task"]["reviews"]]
    response = submit_raw(client, assignment["id"], raw_json({"order": order_of(ids)}))
    assert response.status_code == 400
    assert "review ids" in response.json()["detail"]
    assert Assignment.objects.get(pk=assignment["id"]).payload in ({}, None)
    # The same ids as integers (JSON) or as digit strings (a form) are accepted.
    response = submit_raw(client, assignment["id"], raw_json({"order": ids}))
    assert response.status_code == 201


def test_query_strings_with_control_characters_are_refused():
    client = worker_client()
    response = client.get("/work/?next=%00")
    assert response.status_code == 400
    assert b"NUL" in response.content
    response = client.post("/api/work/rounds/1/next/?x=%1b")
    assert response.status_code == 400 and "U+001B" in response.json()["detail"]


# --- the anonymous provider submit endpoint ----------------------------------------------------


@pytest.fixture
def provider_assignment(settings):
    settings.PROVIDERS_RETRY_PAUSE_SECONDS = 0  # the arrival check cannot reach the provider here: no pauses
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker = provider_services.get_or_create_provider_worker(provider="mturk", external_id="AWORKER9")
    assignment = provider_services.request_provider_assignment(
        round=round, worker=worker, provider_assignment_id="ASSIGN9", provider_task_id="HIT9")
    return assignment


@pytest.mark.parametrize("body, message", [
    (DEEP, "nested more than"),
    (raw_json({"outcome": "correct\x00"}), "NUL"),
    (raw_json({"outcome": "correct", "comment": "\udc00"}), "surrogate"),
])
@pytest.mark.parametrize("with_token", [True, False])
def test_provider_submit_refuses_hostile_bodies_with_or_without_a_token(provider_assignment, body, message,
                                                                       with_token):
    headers = {"X-Task-Token": task_token(assignment=provider_assignment)} if with_token else {}
    response = Client().generic("POST", reverse("providers-api:submit", args=[provider_assignment.pk]), body,
                                content_type="application/json", headers=headers)
    assert response.status_code == 400
    assert message in response.json()["detail"]
    provider_assignment.refresh_from_db()
    assert provider_assignment.status == Assignment.Status.ASSIGNED


def test_provider_submit_refuses_a_hostile_form_field(provider_assignment):
    response = Client().post(reverse("providers-api:submit", args=[provider_assignment.pk]),
                             {"outcome": "correct", "comment": "x\x07"},
                             headers={"X-Task-Token": task_token(assignment=provider_assignment)})
    assert response.status_code == 400 and "U+0007" in response.json()["detail"]
    provider_assignment.refresh_from_db()
    assert provider_assignment.status == Assignment.Status.ASSIGNED


# --- the login page ----------------------------------------------------------------------------


@pytest.mark.parametrize("username, message", [
    ("worker\x00", b"NUL"),
    ("worker\x1b[2J", b"U+001B"),
])
def test_login_page_refuses_hostile_user_names(username, message):
    make_worker_user("worker")
    client = Client()
    body = f"username={_quote(username)}&password=work-pass-123"
    response = client.generic("POST", reverse("login"), body.encode("utf-8", "surrogatepass"),
                              content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert message in response.content
    assert "_auth_user_id" not in client.session


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text.encode("utf-8", "surrogatepass"))
