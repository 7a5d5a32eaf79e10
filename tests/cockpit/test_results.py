"""The results pages: the leaderboard and the IRR results against the cores on known data, their JSON
downloads and PNG plots, the project scoping and the parameters' checks."""
import json

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import Instance
from evaluation.models import JudgedBattle
from evaluation.selectors import human_battles, irr_inputs
from projects.services import create_project
from stats import irr
from stats.ratings import compute_ratings

from .results_data import judged_project

pytestmark = pytest.mark.django_db

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REFERENCE = settings.ANNOTATION_REFERENCE_SIDE_NAME


@pytest.fixture
def data(project, researcher):
    # Another project's judgments are in the same database and must never count here.
    judged_project(create_project(name="Other", slug="other", owner=researcher))
    return judged_project(project)


def as_json(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("method", ["elo", "bt"])
def test_leaderboard_json_is_the_core_on_the_projects_battles(client, researcher, project, data, method):
    client.force_login(researcher)
    response = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]), {"method": method})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert "attachment" in response["Content-Disposition"]
    body = json.loads(response.content)
    battles = human_battles(project=project)
    assert len(battles) == 35 and body["battle_count"] == 35
    expected = compute_ratings(battles, method=method, bootstrap=200, seed=0, reference=REFERENCE).to_dict()
    assert body == {"project": "study-a", "source": "human", "battle_count": 35, **as_json(expected)}
    models = [row["model"] for row in body["models"]]
    assert set(models) == {"model-good", "model-bad", REFERENCE}
    assert models.index("model-good") < models.index("model-bad")  # the planted preference shows
    vs = {row["model"]: row["win_rate_vs_reference"] for row in body["models"]}
    assert vs["model-bad"] == 0.0  # the reference always beat the bad model
    assert set(body["category_win_rates"]) == {"Counting study-a", "Colours study-a"}
    assert all(row["ci_low"] <= row["rating"] <= row["ci_high"] for row in body["models"])


def test_the_page_shows_what_the_json_holds(client, researcher, data):
    client.force_login(researcher)
    html = client.get(reverse("cockpit:results", args=["study-a"]), {"method": "bt"}).content.decode()
    body = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]), {"method": "bt"}).json()
    for row in body["models"]:
        assert f"{row['rating']:.1f}" in html and f"{row['ci_low']:.1f} … {row['ci_high']:.1f}" in html
    bad = next(row for row in body["models"] if row["model"] == "model-bad")
    assert f"<td>{bad['win_rate_vs_reference']:.3f}</td><td>{bad['ties_vs_reference']}</td>" in html
    assert "<th>Win rate vs human-verified reference</th><th>Ties with human-verified reference</th>" in html
    assert 'name="bootstrap" min="1" max="5000"' in html
    assert "Win rate per category against human-verified reference" in html
    assert "leaderboard.json?source=human&amp;method=bt&amp;bootstrap=200&amp;seed=0" in html


def test_download_may_ask_for_more_bootstrap_rounds(client, researcher, project, data):
    client.force_login(researcher)
    body = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]), {"bootstrap": "500", "seed": "3"}).json()
    expected = compute_ratings(human_battles(project=project), method="elo", bootstrap=500, seed=3, reference=REFERENCE)
    assert body["bootstrap_rounds"] == 500 and body["models"] == as_json(expected.to_dict())["models"]


@pytest.mark.parametrize("name", ["ratings", "categories"])
def test_plots_are_png(client, collaborator, data, name):
    client.force_login(collaborator)
    response = client.get(reverse("cockpit:leaderboard-plot", args=["study-a", name]), {"method": "bt"})
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content.startswith(PNG_MAGIC)


def test_results_are_cached_per_parameters_and_data(client, researcher, project, data):
    client.force_login(researcher)
    url = reverse("cockpit:leaderboard-json", args=["study-a"])
    asked = {"bootstrap": "300"}  # not the page's default: computed on request, cached per data read
    first = client.get(url, asked).json()
    # The judgment in flight comes in: the data read changes, so the result is recomputed.
    late = data.in_flight_worker
    assignment = request_assignment(round=data.pairwise, worker=late)
    submit_assignment(assignment_id=assignment.pk, worker=late, data={"choice": "left"})
    second = client.get(url, asked).json()
    assert second["battle_count"] == first["battle_count"] + 1
    assert client.get(url, asked).json() == second


def test_judge_source_reads_the_projects_judged_battles(client, researcher, project, data):
    instances = Instance.objects.filter(family__project=project).order_by("pk")
    for number, instance in enumerate(instances):
        JudgedBattle.objects.create(instance=instance, model_a="model-good", model_b="model-bad", judge_model="judge-1",
                                    with_reference=False, winner="model_a" if number else "tie",
                                    prompt_template="judge", prompt_version=1)
    other = Instance.objects.exclude(family__project=project).first()
    JudgedBattle.objects.create(instance=other, model_a="model-good", model_b="model-bad", judge_model="judge-1",
                                with_reference=False, winner="model_b", prompt_template="judge", prompt_version=1)
    client.force_login(researcher)
    body = client.get(reverse("cockpit:leaderboard-json", args=["study-a"]), {"source": "judge"}).json()
    assert body["source"] == "judge" and body["battle_count"] == 4 and body["reference"] is None
    good = next(row for row in body["models"] if row["model"] == "model-good")
    assert good["battles"] == 4


def test_no_battles_yet_is_said_not_failed(client, researcher, project):
    client.force_login(researcher)
    html = client.get(reverse("cockpit:results", args=["study-a"])).content.decode()
    assert "No pairwise judgments in this project" in html
    judge = client.get(reverse("cockpit:results", args=["study-a"]), {"source": "judge"}).content.decode()
    step = reverse("cockpit:project", args=["study-a"]) + "#start-judge_outputs"
    assert f'<a id="judge-step-link" href="{step}">Judge model outputs</a>' in judge
    assert client.get(reverse("cockpit:leaderboard-json", args=["study-a"])).json()["models"] == []
    assert client.get(reverse("cockpit:leaderboard-plot", args=["study-a", "ratings"])).status_code == 404
    assert client.get(reverse("cockpit:irr-plot", args=["study-a", "sweep"])).status_code == 404
    assert "No rankings in this project" in client.get(reverse("cockpit:irr", args=["study-a"])).content.decode()


@pytest.mark.parametrize("query", [{"source": "crowd"}, {"method": "glicko"}, {"bootstrap": "0"},
                                   {"bootstrap": "1000000"}, {"bootstrap": "many"}, {"seed": "-1"}])
def test_bad_leaderboard_parameters_are_a_400_naming_them(client, researcher, data, query):
    client.force_login(researcher)
    for name in ("results", "leaderboard-json"):
        response = client.get(reverse(f"cockpit:{name}", args=["study-a"]), query)
        assert response.status_code == 400 and next(iter(query)) in response.content.decode()


def test_unknown_plot_is_not_found(client, researcher, data):
    client.force_login(researcher)
    assert client.get(reverse("cockpit:leaderboard-plot", args=["study-a", "nope"])).status_code == 404


def test_irr_json_is_the_core_report_of_the_projects_rankings(client, researcher, project, data):
    client.force_login(researcher)
    response = client.get(reverse("cockpit:irr-json", args=["study-a"]), {"threshold": "0.8"})
    assert response.status_code == 200
    rankings, scores = irr_inputs(project=project)
    assert rankings["item_id"].nunique() == 3  # the other project's review sets stay out
    expected = irr.report_json(irr.irr_report(rankings, scores, threshold=0.8))
    assert response.json() == {"project": "study-a", **as_json(expected)}
    body = response.json()
    assert body["summary"] == {"items": 3, "evaluable": 3, "kept": 3}
    assert {(row["model"], row["language"]) for row in body["models"]} == {("model-m", "en"), ("model-m", "ja")}


def test_irr_page_shows_sweep_models_and_kept_items(client, collaborator, data):
    client.force_login(collaborator)
    html = client.get(reverse("cockpit:irr", args=["study-a"])).content.decode()
    assert "Threshold sweep" in html and "model-m" in html and "Human (reference)" in html
    assert "3 review sets ranked, 3 with two or more rankings, 3 kept" in html
    # Best pairs are named by worker label, as on the worker pages.
    from quality.selectors import worker_labels

    kept = client.get(reverse("cockpit:irr-json", args=["study-a"])).json()["items"]
    pairs = [item["best_pair"] for item in kept if item["kept"]]
    labels = worker_labels(id for pair in pairs for id in pair)
    for pair in pairs:
        assert f"<td>{labels[pair[0]]}, {labels[pair[1]]}</td>" in html
    assert f"<td>{pairs[0][0]}, {pairs[0][1]}</td>" not in html
    plot = client.get(reverse("cockpit:irr-plot", args=["study-a", "sweep"]))
    assert plot.status_code == 200 and plot.content.startswith(PNG_MAGIC)


@pytest.mark.parametrize("threshold", ["1.5", "-2", "nan", "x"])
def test_bad_threshold_is_a_400(client, researcher, data, threshold):
    client.force_login(researcher)
    response = client.get(reverse("cockpit:irr-json", args=["study-a"]), {"threshold": threshold})
    assert response.status_code == 400 and "threshold" in response.content.decode()


def test_results_are_for_members_only(client, make_researcher, data):
    client.force_login(make_researcher("eve"))
    for name, extra in (("results", []), ("leaderboard-json", []), ("leaderboard-plot", ["ratings"]), ("irr", []),
                        ("irr-json", []), ("irr-plot", ["sweep"])):
        assert client.get(reverse(f"cockpit:{name}", args=["study-a", *extra])).status_code == 404


def test_worker_text_in_model_names_is_escaped(client, researcher, project, data):
    from datasets_app.models import ModelOutput

    ModelOutput.objects.filter(instance__family__project=project, model_name="model-bad").update(
        model_name="<script>alert(1)</script>")
    from annotation.models import WorkItem

    WorkItem.objects.filter(round=data.pairwise, side_a_name="model-bad").update(side_a_name="<script>alert(1)</script>")
    WorkItem.objects.filter(round=data.pairwise, side_b_name="model-bad").update(side_b_name="<script>alert(1)</script>")
    client.force_login(researcher)
    html = client.get(reverse("cockpit:results", args=["study-a"])).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html



def test_battles_that_cannot_be_rated_are_a_refusal_not_a_crash(project):
    import pandas as pd

    from evaluation.results import ResultsError, leaderboard_result

    frame = pd.DataFrame({"model_a": ["m1", "m1"], "model_b": ["m2", "m1"], "winner": ["model_a", "tie"],
                          "category": ["c", "c"]})
    with pytest.raises(ResultsError, match="cannot be rated: data row 2, field 'model_b'") as refusal:
        leaderboard_result(frame, project=project, source="judge", method="bt", bootstrap=10, seed=0)
    assert refusal.value.status_code == 400
