"""Self-service leaderboard: a predictions file uploaded on the board, judged against the models
already there and the reference, puts the new model in the judge ratings."""
import pytest
from django.urls import reverse

from evaluation.judge.services import REFERENCE
from evaluation.models import JudgedBattle
from evaluation.selectors import battles
from stats.ratings import compute_ratings
from stepruns.models import StepRun

from ..conftest import PASSWORD
from .conftest import MODEL, judged_instance
from .test_uploads import predictions_csv, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def board_with_models(project):
    return [judged_instance(project) for _ in range(3)]


def judge_form(models, reference="against", budget="1.00"):
    return {"judge_outputs-run-model": MODEL, "judge_outputs-run-budget_usd": budget,
            "judge_outputs-models": list(models), "judge_outputs-reference": reference}


def test_an_uploaded_model_is_judged_against_the_board_and_enters_the_ratings(
        client, researcher, project, board_with_models, llm_settings, fake_server,
        django_capture_on_commit_callbacks):
    client.login(username=researcher.username, password=PASSWORD)
    # The new model writes long answers; the fake judge prefers the longer response.
    content = predictions_csv(board_with_models, text=lambda n: f"A long and careful answer number {n} " * 5)
    judge_page = client.get(upload(client, project, "predictions", "preds.csv", content).url).content.decode()
    for model in ("model-x", "model-y", "new-vlm"):
        assert f'value="{model}"' in judge_page  # offered, all checked
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("cockpit:start-step", args=[project.slug, "judge_outputs"]),
                               judge_form(["model-x", "model-y", "new-vlm"]))
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED, run.summary
    # 3 model pairs + 3 models against the reference, on 3 instances, both orders.
    assert JudgedBattle.objects.count() == 18 and run.total == run.done == 36
    assert run.cost_usd > 0 and not run.failures
    assert sorted(run.result["battle_ids"]) == sorted(JudgedBattle.objects.values_list("pk", flat=True))

    ratings = compute_ratings(battles(source="judge"), reference=REFERENCE)
    assert set(ratings.models) == {"model-x", "model-y", "new-vlm", REFERENCE}
    assert ratings.models[int(ratings.rank.argmin())] == "new-vlm"
    page = client.get(response.url).content.decode()
    assert 'id="results-link" href="/projects/study-a/results/"' in page


def test_reference_backed_judging_only_takes_instances_with_a_reference(
        client, researcher, project, board_with_models, llm_settings, django_capture_on_commit_callbacks):
    board_with_models[0].accepted_reference.delete()
    client.login(username=researcher.username, password=PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("cockpit:start-step", args=[project.slug, "judge_outputs"]),
                    judge_form(["model-x", "model-y"], reference="backed"))
    run = StepRun.objects.get()
    assert run.status == StepRun.Status.SUCCEEDED and run.parameters["reference"] == "backed"
    assert set(JudgedBattle.objects.values_list("with_reference", flat=True)) == {True}
    assert not JudgedBattle.objects.filter(instance=board_with_models[0]).exists()
    assert any("no accepted reference" in message for message in run.failures)


def test_one_model_alone_needs_the_reference(client, researcher, project, board_with_models, llm_settings):
    client.login(username=researcher.username, password=PASSWORD)
    response = client.post(reverse("cockpit:start-step", args=[project.slug, "judge_outputs"]),
                           judge_form(["model-x"], reference="none"))
    assert response.status_code == 400 and "one model and the reference" in response.content.decode()
    assert not StepRun.objects.exists()


def test_models_of_another_project_cannot_be_judged(client, researcher, project, board_with_models, make_researcher,
                                                    llm_settings):
    from projects.services import create_project

    from .conftest import judged_instance

    judged_instance(create_project(name="B", slug="b", owner=make_researcher("bob")), models=("secret-a", "secret-b"))
    client.login(username=researcher.username, password=PASSWORD)
    response = client.post(reverse("cockpit:start-step", args=[project.slug, "judge_outputs"]),
                           judge_form(["secret-a", "secret-b"]))
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert "secret-a" not in client.get(reverse("cockpit:project", args=[project.slug])).content.decode()
    assert not StepRun.objects.exists()


def test_an_uploaded_model_name_is_shown_escaped(client, researcher, project, board_with_models):
    client.login(username=researcher.username, password=PASSWORD)
    content = predictions_csv(board_with_models, model="<img src=x onerror=alert(1)>")
    response = upload(client, project, "predictions", "preds.csv", content)
    for url in (response.url, reverse("cockpit:project", args=[project.slug])):
        page = client.get(url).content.decode()
        assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
