"""Plain regression tests for what the API fuzzer found (tests/fuzz/test_api_fuzz.py)."""
from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import call_command


pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(tmp_path):
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--file", str(out), stdout=io.StringIO())
    return yaml.safe_load(out.read_text())


def test_an_unknown_api_address_answers_json_404(owner_api, client):
    # A path id that is no integer matches no URL: Django's HTML page answered before.
    response = owner_api.get("/api/rounds/not-a-number/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}
    # Pages outside the API keep the HTML page.
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_publishing_to_an_unconfigured_prolific_is_a_409_not_a_502(owner_api, world, settings):
    from annotation.services.rounds import add_items
    from datasets_app.models import ModelOutput

    settings.PROLIFIC_API_TOKEN = ""
    round = world["round"]
    # The world's judged round is complete: one more item gives it work to publish.
    instance = round.items.order_by("position").first().output_a.instance
    add_items(round=round, targets=[tuple(ModelOutput.objects.filter(instance=instance).order_by("model_name")[:2])])
    response = owner_api.post(f"/api/rounds/{round.pk}/publish/", {"provider": "prolific"}, format="json")
    assert response.status_code == 409, response.content
    assert "PROLIFIC_API_TOKEN is not set" in response.json()["detail"]
    from providers.models import Publication
    assert not Publication.objects.filter(round=round).exists()


def test_query_parameter_errors_and_conflicts_are_documented(schema, owner_api, world):
    paths = schema["paths"]
    # irr-report and ratings refuse a malformed query parameter with a 400 (DRF's field messages).
    response = owner_api.get("/api/evaluations/irr-report/", {"project": world["project"].slug, "round": "x"})
    assert response.status_code == 400 and "round" in response.json()
    for path in ("/api/evaluations/irr-report/", "/api/evaluations/ratings/"):
        assert "400" in paths[path]["get"]["responses"]
    bad_request = schema["components"]["schemas"]["BadRequest"]
    assert "detail" not in bad_request.get("required", [])
    # Round transitions answer 409 when the state does not allow them.
    assert "409" in paths["/api/rounds/{id}/open/"]["post"]["responses"]
    response = owner_api.post(f"/api/rounds/{world['round'].pk}/open/")
    assert response.status_code == 409


def test_the_worker_schema_documents_the_worker_and_provider_endpoints(client):
    response = client.get("/api/work/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "crowdbench worker API"
    assert set(schema["paths"]) == {
        "/api/work/rounds/{round_id}/next/",
        "/api/work/assignments/{assignment_id}/submit/",
        "/api/work/assignments/{assignment_id}/submit-and-next/",
        "/api/work/assignments/{assignment_id}/start/",
        "/api/work/assignments/{assignment_id}/return/",
        "/api/work/assignments/{assignment_id}/report-image/",
        "/api/providers/assignments/{assignment_id}/submit/",
        "/api/providers/assignments/{assignment_id}/report-image/",
    }
    submit = schema["paths"]["/api/providers/assignments/{assignment_id}/submit/"]["post"]
    assert {"200", "201", "400", "403", "404", "409", "429"} <= set(submit["responses"])
    assert any(p["name"] == "X-Task-Token" and p["in"] == "header" for p in submit["parameters"])


def test_the_worker_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "worker.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out),
                 "--custom-settings", "api.worker_schema.WORKER_SCHEMA_SETTINGS", stdout=io.StringIO())
    assert "/api/work/rounds/{round_id}/next/" in yaml.safe_load(out.read_text())["paths"]
