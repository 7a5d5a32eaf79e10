"""Researcher API tests: a project with imported VisIT-Bench-like data, tokens, API clients."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from projects.tokens import create_token
from datasets_app.services import import_visitbench_file
from tests.annotation.factories import make_worker_user
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)
from tests.pipeline.test_model_outputs import write_csv
from tests.cockpit.conftest import collaborator, make_researcher, project, researcher  # noqa: F401

INSTANCES = [
    # (image_url, category, instruction, human-annotated answer)
    ("https://img.example.org/kitchen.jpg", "Counting", "How many cups are on the table?", "There are three cups."),
    ("https://img.example.org/street.jpg", "Counting", "How many cars are parked on the left?", "Two cars."),
    ("https://img.example.org/menu.jpg", "Reading", "What is the cheapest dish on the menu?", "The soup, at $4."),
    ("https://img.example.org/sign.jpg", "Reading", "What does the red sign say?", "It says STOP."),
]
MODELS = ("model-good", "model-bad")


@pytest.fixture
def releases_in_tmp(settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return settings.RELEASES_ROOT


@pytest.fixture
def study(project, tmp_path, releases_in_tmp):
    """``project`` (owned by ``researcher``) with four verified single-image instances, imported from
    a published-schema VisIT-Bench CSV as a researcher would."""
    path = write_csv(tmp_path / "visit_bench_single.csv",
                     ["image_url", "image_dense_caption", "instruction_category", "instruction", "output_human_annotated"],
                     [[url, f"A photo for: {instruction}", category, instruction, answer]
                      for url, category, instruction, answer in INSTANCES])
    import_visitbench_file(path=path, project=project, image_license="CC-BY-4.0")
    return project


@pytest.fixture
def world(study, researcher, tmp_path):
    """``study`` with the demo review sets, both models' outputs, a pairwise round judged by two
    local workers (so complete), and a release: something behind every endpoint."""
    from annotation.services.engine import request_assignment
    from annotation.services.rounds import add_items, create_round, open_round
    from annotation.services.submissions import submit_assignment
    from demo.data import create_demo_data
    from datasets_app.model_outputs import import_predictions
    from datasets_app.models import ModelOutput
    from releases_app.services import make_release
    from tests.annotation.factories import make_worker

    create_demo_data(project=study)
    import_predictions(path=predictions_csv(tmp_path / "predictions.csv"))
    pairs = []
    for instance in study.families.get(name="Counting").instances.all():
        outputs = {o.model_name: o for o in ModelOutput.objects.filter(instance=instance)}
        pairs.append((outputs["model-good"], outputs["model-bad"]))
    round = create_round(name="Battles", task_type="pairwise", project=study, workers_per_item=2,
                               created_by=researcher)
    add_items(round=round, targets=pairs)
    open_round(round=round)
    for _ in range(2):
        worker = make_worker()
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    release = make_release(project=study, name="study", version="0.1.0", out_dir=tmp_path / "release-0.1.0")
    return {"project": study, "round": round, "release": release}


def predictions_csv(path, models=MODELS, rows=INSTANCES):
    return write_csv(path, ["instruction", "instruction_category", "image", *(f"{m} prediction" for m in models)],
                     [[instruction, category, url, *(f"{m} answers: {answer}" for m in models)]
                      for url, category, instruction, answer in rows])


def token_client(user) -> APIClient:
    _record, token = create_token(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


@pytest.fixture
def owner_api(researcher):
    return token_client(researcher)


@pytest.fixture
def collaborator_api(collaborator):
    return token_client(collaborator)


@pytest.fixture
def outsider_api(make_researcher):
    return token_client(make_researcher("mallory"))


@pytest.fixture
def worker_api():
    client = APIClient()
    client.force_login(make_worker_user("wendy"))
    return client
