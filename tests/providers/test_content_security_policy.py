"""The Content-Security-Policy header of every page: a fresh nonce per response, no inline script,
handler or style outside it, and framing only of the MTurk page, only by MTurk's worker sites."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment
from projects.services import create_project
from providers import services
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import MTurkProvider
from providers.prolific.provider import ProlificProvider
from tests.annotation.factories import make_worker_user
from tests.providers.test_forged_work import started

pytestmark = pytest.mark.django_db
PASSWORD = "csp-pass-123"
MTURK_SITES = ["https://worker.mturk.com", "https://www.mturk.com", "https://workersandbox.mturk.com"]
SANDBOX = "https://workersandbox.mturk.com"


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"{response.request['PATH_INFO']} has no Content-Security-Policy header"
    directives = {}
    for part in header.split(";"):
        name, *sources = part.split()
        assert name not in directives, f"{name} twice in {header!r}"
        directives[name] = sources
    return directives


def nonce_of(directives) -> str:
    nonces = [source for source in directives["script-src"] if source.startswith("'nonce-")]
    assert len(nonces) == 1, directives["script-src"]
    return nonces[0]


@pytest.fixture
def researcher_client(django_user_model, settings):
    user = django_user_model.objects.create_user(username="ada", password=PASSWORD, is_staff=True,
                                                 is_superuser=True)
    user.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
    create_project(name="Study A", slug="study-a", owner=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def mturk_round(mturk_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hit = HIT.objects.order_by("item__position").first()
    assignment_id = mturk_fake.accept_assignment(hit.hit_id, "AWORKER1")
    base = f"/work/mturk/{round.pk}/?hitId={hit.hit_id}"
    return {
        "preview": f"{base}&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE",
        "task": f"{base}&assignmentId={assignment_id}&workerId=AWORKER1&turkSubmitTo={SANDBOX}",
        "refusal": f"{base}&assignmentId={assignment_id}&workerId=AWORKER1&turkSubmitTo=https://evil.example.org",
    }


@pytest.fixture
def prolific_task_url(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    study = Publication.objects.get(round=round).external_id
    # A participant who really started the study: Prolific vouches for the arrival.
    participant, session = started(prolific_fake, study)
    return f"/work/prolific/{round.pk}/?PROLIFIC_PID={participant}&STUDY_ID={study}&SESSION_ID={session}"


@pytest.fixture
def pages(researcher_client, round_factory):
    """Representative pages that may not be framed, each with the client that sees it."""
    round = round_factory(items=1, workers_per_item=1)
    worker = Client()
    worker.force_login(make_worker_user("csp-worker"))
    anonymous = Client()
    return [
        (anonymous, "/"),
        (anonymous, reverse("login")),
        (anonymous, "/admin/login/"),
        (anonymous, "/no/such/page/"),
        (researcher_client, reverse("cockpit:projects")),
        (researcher_client, reverse("cockpit:project", args=["study-a"])),
        (researcher_client, reverse("cockpit:rounds", args=["study-a"])),
        (researcher_client, reverse("cockpit:round-new", args=["study-a"])),
        (researcher_client, reverse("cockpit:members", args=["study-a"])),
        (researcher_client, reverse("cockpit:api-tokens")),
        (researcher_client, "/admin/"),
        (researcher_client, "/admin/annotation/collectionround/"),
        (researcher_client, "/api/docs/"),
        (researcher_client, "/api/projects/?format=api"),  # DRF's browsable API
        (researcher_client, "/api/projects/study-a/?format=api"),
        (worker, reverse("annotation:work-list")),
        (worker, reverse("annotation:history")),
        (worker, reverse("annotation:round", args=[round.pk])),
    ]


def test_every_page_has_a_content_security_policy_with_a_fresh_nonce(pages):
    for client, url in pages:
        first, second = client.get(url), client.get(url)
        assert first.status_code in (200, 404), (url, first.status_code)
        directives = policy(first)
        assert directives["default-src"] == ["'self'"], url
        assert directives["script-src"][0] == "'self'" and len(directives["script-src"]) == 2, url
        assert directives["style-src"] == ["'self'", nonce_of(directives)], url
        assert {"'self'", "data:", "https:"} <= set(directives["img-src"]), url
        assert directives["connect-src"] == ["'self'"], url
        assert directives["base-uri"] == ["'none'"] and directives["object-src"] == ["'none'"], url
        assert directives["form-action"] == ["'self'"], url
        assert directives["frame-ancestors"] == ["'none'"], url
        assert first.headers["X-Frame-Options"] == "DENY", url
        assert "'unsafe-inline'" not in first.headers["Content-Security-Policy"], url
        assert "'unsafe-eval'" not in first.headers["Content-Security-Policy"], url
        # A nonce is a fresh secret of each response, never reused.
        assert nonce_of(directives) != nonce_of(policy(second)), url
        assert len(nonce_of(directives)) >= len("'nonce-'") + 22, url


def inline_code(html: str) -> list[str]:
    """What a strict policy refuses in a page: scripts without src or nonce (JSON data blocks are
    not run), event-handler attributes, javascript: links and style attributes or blocks."""
    found = []
    for tag in re.findall(r"<script\b[^>]*>", html, flags=re.I):
        if "src=" not in tag and "nonce=" not in tag and 'type="application/json"' not in tag:
            found.append(tag)
    for tag in re.findall(r"<style\b[^>]*>", html, flags=re.I):
        if "nonce=" not in tag:
            found.append(tag)
    found += re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", html, flags=re.I)
    found += re.findall(r"<[^>]*\sstyle\s*=[^>]*>", html, flags=re.I)
    found += re.findall(r"<[^>]*=\s*[\"']?javascript:[^>]*>", html, flags=re.I)
    return found


def test_pages_have_no_inline_script_handler_or_style_the_policy_refuses(pages, mturk_round, prolific_task_url):
    provider_pages = [(Client(), url) for url in (*mturk_round.values(), prolific_task_url)]
    responses = [(url, client.get(url)) for client, url in [*pages, *provider_pages]]
    for url, response in responses:
        assert inline_code(response.content.decode()) == [], url
    for url, response in responses:
        html = response.content.decode()
        nonce = nonce_of(policy(response))[len("'nonce-"):-1]
        for tag in re.findall(r"<(?:script|style)\b[^>]*\snonce=[^>]*>", html):
            assert f'nonce="{nonce}"' in tag, (url, tag)


def test_mturk_page_may_be_framed_only_by_mturks_worker_sites(mturk_round):
    for name, url in mturk_round.items():
        response = Client().get(url)
        assert response.status_code == (400 if name == "refusal" else 200), name
        directives = policy(response)
        assert directives["frame-ancestors"] == MTURK_SITES, name
        # CSP's frame-ancestors decides; an X-Frame-Options header would forbid MTurk's frame too.
        assert "X-Frame-Options" not in response.headers, name
        # The hand-over posts to the environment's externalSubmit (and the configured endpoint),
        # which answers with a redirect to MTurk's worker site.
        assert directives["form-action"][0] == "'self'", name
        assert {SANDBOX, "https://www.mturk.com", "https://worker.mturk.com"} <= set(directives["form-action"])
        assert directives["script-src"][0] == "'self'" and directives["base-uri"] == ["'none'"], name
    assert Assignment.objects.count() == 1


def test_mturk_frame_ancestors_follow_the_setting(mturk_round, settings):
    settings.MTURK_FRAME_ANCESTORS = ["https://workersandbox.mturk.com"]
    response = Client().get(mturk_round["task"])
    assert policy(response)["frame-ancestors"] == ["https://workersandbox.mturk.com"]


def test_prolific_page_may_not_be_framed(prolific_task_url):
    # Prolific opens a study in its own tab, never in a frame.
    response = Client().get(prolific_task_url)
    assert response.status_code == 200 and 'id="task-form"' in response.content.decode()
    assert policy(response)["frame-ancestors"] == ["'none'"]
    assert response.headers["X-Frame-Options"] == "DENY"


def test_img_src_names_the_media_storage_origin(researcher_client, settings):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {"bucket_name": "media", "endpoint_url": "http://minio.example.org:9000/"},
    }}
    assert "http://minio.example.org:9000" in policy(researcher_client.get("/projects/"))["img-src"]
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {"bucket_name": "media", "custom_domain": "media.example.org"},
    }}
    assert "https://media.example.org" in policy(researcher_client.get("/projects/"))["img-src"]
    settings.MEDIA_URL = "http://cdn.example.org/media/"
    assert "http://cdn.example.org" in policy(researcher_client.get("/projects/"))["img-src"]
