"""The OpenAPI schema validates, documents the researcher API only, and its UI works offline."""
from __future__ import annotations

import io

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
