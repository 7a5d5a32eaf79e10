"""The OpenAPI schema validates, documents the researcher API only, and its UI works offline."""
from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_the_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yml"
    # --fail-on-warn turns any warning or error of schema generation or validation into a failure.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out), stdout=io.StringIO())
    schema = yaml.safe_load(out.read_text())
    paths = schema["paths"]
    assert "/api/rounds/{id}/publish/" in paths and "/api/model-outputs/upload/" in paths
    assert "/api/releases/{id}/files/{path}" in paths
    assert not [p for p in paths if p.startswith(("/api/work/", "/api/providers/"))]
    # Errors are documented with their body, and the token scheme is declared.
    assert set(paths["/api/rounds/"]["post"]["responses"]) >= {"201", "400", "401", "403", "404"}
    assert "knoxApiToken" in schema["components"]["securitySchemes"]


def test_the_schema_endpoint_and_the_offline_documentation_page(client, researcher):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "crowdbench researcher API"
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn." not in html and "unpkg" not in html


def test_concurrent_researcher_and_worker_schema_requests_never_mix_or_fail(monkeypatch):
    """#26 item 7: /api/schema/ and /api/work/schema/ requested at once from several threads. The worker
    schema's settings were patched into drf-spectacular's global settings for each request, so
    overlapping requests answered 500 and left /api/schema/ serving the worker schema afterwards."""
    import threading
    import time

    from django.test import Client
    from drf_spectacular.generators import SchemaGenerator

    from api import schema_views

    schema_views.forget_schemas()
    generate = SchemaGenerator.get_schema

    def slow_get_schema(self, *args, **kwargs):
        time.sleep(0.02)  # widens the window in which one request's settings are patched
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", slow_get_schema)
    answers, start = [], threading.Barrier(8)

    def requests(offset):
        client = Client(raise_request_exception=False)
        start.wait()
        for number in range(8):
            url = ("/api/schema/", "/api/work/schema/")[(number + offset) % 2]
            response = client.get(url, HTTP_ACCEPT="application/vnd.oai.openapi+json")
            answers.append((url, response.status_code, response.content))

    threads = [threading.Thread(target=requests, args=(offset,)) for offset in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    answers.append(("/api/schema/", after.status_code, after.content))

    assert len(answers) == 65
    assert [status for _, status, _ in answers] == [200] * 65
    for url, _, content in answers:
        paths = json.loads(content)["paths"]
        if url == "/api/schema/":
            assert "/api/projects/" in paths and not any(p.startswith("/api/work/") for p in paths)
        else:
            assert "/api/work/rounds/{round_id}/next/" in paths and "/api/projects/" not in paths
