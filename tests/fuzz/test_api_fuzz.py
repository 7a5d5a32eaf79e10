"""Property-based fuzzing of the researcher API from its OpenAPI schema (schemathesis, in-process WSGI).

For every operation of ``/api/schema/``, valid and invalid requests made from the schema are sent as
an owner (knox token) and as a logged-in worker, against a project with data (``world``). The
property: never a 5xx, and every answer has a documented status code, a documented content type and
a body that matches the schema. Path ids are drawn half of the time from the project's real rows,
so that requests reach the services and not only the 404 of an unknown id. Examples per operation
are bounded and derandomized: the same requests run on every run.
"""
from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.settings import patched_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.worker_schema import WORKER_SCHEMA_SETTINGS
from projects.tokens import create_token
from tests.annotation.factories import make_worker_user

pytestmark = pytest.mark.django_db

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
FUZZ_SETTINGS = settings(
    max_examples=10,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def api_app(world, settings):
    # Rate limits would answer 429 long before the fuzzer is through; they have their own tests.
    settings.RATE_LIMITS_ENABLED = False
    # As Django's test client does: the end of a request must not close the test's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def real_ids(world):
    """The ids of the project's rows, by the first segment of the API path."""
    from annotation.models import Assignment, WorkItem
    from datasets_app.models import Image, Instance, InstructionFamily, ModelOutput, ReviewSet

    project = world["project"]
    instances = Instance.objects.filter(family__project=project)
    return {
        "families": list(InstructionFamily.objects.filter(project=project).values_list("pk", flat=True)),
        "instances": list(instances.values_list("pk", flat=True)),
        "images": list(Image.objects.filter(instance_links__instance__in=instances).values_list("pk", flat=True)),
        "review-sets": list(ReviewSet.objects.filter(project=project).values_list("pk", flat=True)),
        "model-outputs": list(ModelOutput.objects.filter(instance__in=instances).values_list("pk", flat=True)),
        "rounds": list(project.rounds.values_list("pk", flat=True)),
        "items": list(WorkItem.objects.filter(round__project=project).values_list("pk", flat=True)),
        "submissions": list(Assignment.objects.filter(round__project=project).values_list("pk", flat=True)),
        "releases": [world["release"].pk],
    }


def aim_at_real_rows(case, ids_by_parameter):
    """Point each integer id of the path at a real row when the drawn number is even."""
    for name, drawn in list((case.path_parameters or {}).items()):
        ids = ids_by_parameter(case, name)
        if ids and isinstance(drawn, int) and not isinstance(drawn, bool) and drawn % 2 == 0:
            case.path_parameters[name] = ids[(drawn // 2) % len(ids)]


def researcher_ids(real_ids):
    return lambda case, name: real_ids.get(case.path.strip("/").split("/")[1], []) if name == "id" else []


def worker_session(user) -> dict:
    """Keyword arguments of a call: the logged-in session's cookie, and a matching CSRF cookie and header."""
    client = Client()
    client.force_login(user)
    csrf = "fuzzcsrf" * 4
    return {"cookies": {"sessionid": client.cookies["sessionid"].value, "csrftoken": csrf},
            "headers": {"X-CSRFToken": csrf}}


def load_schema(custom_settings=None):
    """A schema as /api/schema/ (or /api/work/schema/) serves it, made in-process; requests go to the
    WSGI application."""
    with patched_settings(custom_settings):
        generated = SchemaGenerator().get_schema(request=None, public=True)
    raw = json.loads(OpenApiJsonRenderer().render(generated))
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    return schema


SCHEMA = load_schema()
OPERATIONS = sorted(result.ok().label for result in SCHEMA.get_all_operations())
WORKER_SCHEMA = load_schema(WORKER_SCHEMA_SETTINGS)
WORKER_OPERATIONS = sorted(result.ok().label for result in WORKER_SCHEMA.get_all_operations())


def fuzz(label, ids_by_parameter, credentials, schema=SCHEMA) -> list[int]:
    """Run the bounded, derandomized examples of one operation (valid and invalid requests)."""
    operation = schema.find_operation_by_label(label)
    statuses = []

    @FUZZ_SETTINGS
    @given(case=st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)))
    def run(case):
        aim_at_real_rows(case, ids_by_parameter)
        statuses.append(case.call_and_validate(checks=CHECKS, **credentials()).status_code)

    run()
    return statuses


def test_every_operation_is_fuzzed():
    assert len(OPERATIONS) >= 25
    assert "POST /api/rounds/{id}/publish/" in OPERATIONS
    assert len(WORKER_OPERATIONS) == 8
    assert "POST /api/work/assignments/{assignment_id}/submit/" in WORKER_OPERATIONS
    assert "POST /api/work/assignments/{assignment_id}/submit-and-next/" in WORKER_OPERATIONS


@pytest.mark.parametrize("label", OPERATIONS)
def test_owner_token_never_gets_a_server_error(label, api_app, researcher, real_ids):
    def credentials():
        _record, token = create_token(user=researcher)
        return {"headers": {"Authorization": f"Token {token}"}}

    assert fuzz(label, researcher_ids(real_ids), credentials)


@pytest.mark.parametrize("label", OPERATIONS)
def test_worker_session_never_gets_a_server_error(label, api_app, real_ids):
    worker = make_worker_user()
    statuses = fuzz(label, researcher_ids(real_ids), lambda: worker_session(worker))
    # The researcher API is closed to workers: a refusal, whatever the request.
    assert set(statuses) <= {400, 403, 404, 405, 406, 413, 415}, statuses


@pytest.fixture
def busy_worker(world, researcher):
    """A worker with one submitted and one open assignment in a second open pairwise round."""
    from annotation.models import Assignment
    from annotation.services.engine import request_assignment
    from annotation.services.rounds import add_items, create_round, open_round
    from annotation.services.submissions import submit_assignment
    from annotation.services.workers import get_or_create_local_worker

    first = world["round"]
    round = create_round(name="More battles", task_type="pairwise", project=world["project"],
                               workers_per_item=1, created_by=researcher)
    add_items(round=round, targets=[(item.output_a, item.output_b) for item in first.items.all()])
    open_round(round=round)
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    done = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=done.pk, worker=worker, data={"choice": "left"})
    request_assignment(round=round, worker=worker)
    rounds = [first.pk, round.pk]
    assignments = list(Assignment.objects.filter(worker=worker).values_list("pk", flat=True))
    return user, {"round_id": rounds, "assignment_id": assignments}


@pytest.mark.parametrize("label", WORKER_OPERATIONS)
def test_worker_api_never_gets_a_server_error(label, api_app, busy_worker):
    user, ids = busy_worker
    # Logged-in worker session for /api/work/; the provider endpoints take a task token instead, which
    # the fuzzer draws (and so is refused).
    statuses = fuzz(label, lambda case, name: ids.get(name, []), lambda: worker_session(user), WORKER_SCHEMA)
    assert statuses and not [status for status in statuses if status >= 500]
