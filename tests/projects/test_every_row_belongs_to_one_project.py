"""The project invariant over the whole schema: every row of the researchers' data reaches exactly
one project, whichever path created it (the demo, the import commands, the cockpit's and the API's
uploads, the crowd's work, a step run of the pipeline, a release)."""
from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from demo.rounds import create_demo_rounds
from datasets_app.models import Instance
from projects.tokens import create_token
from projects.models import Project
from releases_app.services import make_release
from projects.scoping import CROSS_PROJECT, PROJECT_PATHS, RESEARCHER_DATA_APPS
from projects.services import create_project
from demo.crowd import complete_demo_rounds
from quality.services import recompute_round_quality
from stepruns.models import StepRun
from stepruns.services import start_run
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)
from tests.annotation.factories import make_worker_user, png_bytes
from tests.cockpit.board.conftest import MODEL, fake_server, llm_settings  # noqa: F401  (fixtures)
from tests.cockpit.conftest import make_researcher  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

SHEET = "visit_fully_annotated_example.csv"


def _label(model) -> str:
    return f"{model._meta.app_label}.{model.__name__}"


def _end_of(model, path: str):
    """The model a lookup path ends on."""
    if path == "pk":
        return model
    for name in path.split("__"):
        model = model._meta.get_field(name).related_model
    return model


def test_every_model_of_the_researchers_data_declares_its_project():
    models = {_label(model): model for app in RESEARCHER_DATA_APPS for model in apps.get_app_config(app).get_models()}
    undeclared = sorted(set(models) - set(PROJECT_PATHS) - set(CROSS_PROJECT))
    assert not undeclared, f"declare the path to the project in projects/scoping.py: {undeclared}"
    assert not set(PROJECT_PATHS) & set(CROSS_PROJECT)
    assert not (set(PROJECT_PATHS) | set(CROSS_PROJECT)) - set(models), "declared models that do not exist"
    for label, paths in PROJECT_PATHS.items():
        for path in paths:
            assert _end_of(models[label], path) is Project, f"{label}: {path} does not lead to a project"


def rows_outside_one_project(model, paths) -> list:
    """The rows whose first path is empty or whose paths name different projects."""
    wrong = []
    for pk, *projects in model.objects.values_list("pk", *paths).distinct():
        named = {project for project in projects if project is not None}
        if projects[0] is None or len(named) != 1:
            wrong.append((pk, projects))
    return wrong


def projects_reached(model, path) -> set[int]:
    return set(model.objects.values_list(path, flat=True).distinct())


def _reviews_csv(folder, *, name: str) -> str:
    """Review sets of one image file in English and Japanese (the same bytes for every ``name``)."""
    (folder / f"{name}.png").write_bytes(png_bytes("purple", size=(33, 21)))
    path = folder / f"{name}.csv"
    path.write_text(
        "item_id,language,category,image_path,license,review_1,review_2,review_3,review_4,review_5\n"
        f"r1,en,art,{name}.png,CC0-1.0,a,b,c,d,e\n"
        f"r1,ja,art,{name}.png,CC0-1.0,あ,い,う,え,お\n", encoding="utf-8")
    return str(path)


def test_every_row_built_by_every_creation_path_belongs_to_one_project(
        client, make_researcher, shared_data, tmp_path, llm_settings, django_capture_on_commit_callbacks,
        settings):
    settings.RELEASES_ROOT = tmp_path / "releases"
    quiet = io.StringIO()
    # The demo, with its simulated crowd, in its own project ...
    call_command("load_demo", stdout=quiet)
    demo = Project.objects.get(slug="demo")
    # ... and the demo's data, rounds and crowd once more in a second project.
    ada = make_researcher("ada")
    other = create_project(name="Other study", slug="other", owner=ada)
    rounds = create_demo_rounds(researcher=ada, worker_users=[make_worker_user("other-worker")], project=other)
    for key in complete_demo_rounds(rounds=rounds).completed_items:
        recompute_round_quality(round=rounds[key])
    for project in (demo, other):
        # The same published sheet and the same review sets, with an image file, in both.
        call_command("import_visitbench", str(shared_data / SHEET), "--project", project.slug,
                     "--image-license", "CC-BY-4.0", stdout=quiet)
        call_command("import_reviews", _reviews_csv(tmp_path, name=project.slug), "--project", project.slug,
                     stdout=quiet)
        # A step run of the pipeline: the LLM judge over the project's model outputs.
        with django_capture_on_commit_callbacks(execute=True):
            start_run(project=project, user=ada if project == other else project.memberships.get().user,
                      kind="judge_outputs", model=MODEL, budget_usd="5",
                      parameters={"models": ["blip2-demo", "llava-demo"], "reference": "none"})
    assert set(StepRun.objects.values_list("status", flat=True)) == {StepRun.Status.SUCCEEDED}
    # The cockpit's uploads: families of the same name and review sets in both projects; the API's
    # predictions upload.
    family = ('{"name": "Uploaded family", "seed_instruction": "What is shown?", "seed_response": "A cat.", '
              '"seed_image_urls": ["https://images.example.org/seed.png"], "license": "CC0-1.0"}\n')
    review_sets = ("item_id,language,category,image_url,license,review_1,review_2,review_3,review_4,review_5\n"
                   "u1,en,art,https://images.example.org/u1.png,CC0-1.0,a,b,c,d,e\n")
    predictions = "instruction,instance_id,new-model prediction\n"
    for project in (demo, other):
        client.force_login(project.memberships.get().user)
        for what, name, content in (("families", "families.jsonl", family),
                                    ("review-sets", "review_sets.csv", review_sets)):
            response = client.post(reverse("cockpit:board-upload", args=[project.slug, what]),
                                   {f"{what}-file": SimpleUploadedFile(name, content.encode())})
            assert response.status_code == 302, response.content.decode()[:500]
        instance = Instance.objects.filter(family__project=project).order_by("pk").first()
        predictions += f'"{instance.instruction}",{instance.pk},"New model on {project.slug}."\n'
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {create_token(user=ada)[1]}")
    response = api.post("/api/model-outputs/upload/",
                        {"project": other.slug, "file": SimpleUploadedFile("predictions.csv", predictions.encode())})
    assert response.status_code == 201 and response.json()["matched"] == 1, response.content
    make_release(project=demo, name="demo", version="1.0.0", out_dir=tmp_path / "release")

    wrong = {}
    for label, paths in PROJECT_PATHS.items():
        rows = rows_outside_one_project(apps.get_model(label), paths)
        if rows:
            wrong[label] = rows[:3]
    assert not wrong, f"rows outside exactly one project: {wrong}"
    # Not vacuous: every kind of row the paths made is there, in both projects.
    both = {demo.pk, other.pk}
    for label in ("datasets_app.InstructionFamily", "datasets_app.Image", "datasets_app.InstanceImage",
                  "datasets_app.FamilySeedImage", "datasets_app.Caption", "datasets_app.Verification",
                  "datasets_app.ModelOutput", "datasets_app.ReviewSet", "datasets_app.Review",
                  "annotation.CollectionRound", "annotation.WorkItem", "annotation.Assignment",
                  "evaluation.JudgedBattle", "quality.RoundQuality", "stepruns.StepRun"):
        assert projects_reached(apps.get_model(label), PROJECT_PATHS[label][0]) == both, label
