"""Leaderboard exchange formats: importing published pairwise preferences, exporting battles as
VisIT-Bench leaderboard JSON lines. Instances come from the published single-image CSV."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from annotation.models import Assignment
from annotation.selectors import round_progress
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import AcceptedReference, Instance, ModelOutput
from datasets_app.services import import_visitbench_file
from evaluation.models import ImportedPreference, JudgedBattle
from evaluation.preference_import import PREFERENCE_COLUMNS
from evaluation.selectors import battles, human_battles
from fakes.openai_server import FakeOpenAIServer, judge_responder
from projects.services import create_project
from stats.ratings import compute_ratings
from tests.annotation.factories import make_family, make_instance, make_outputs, make_reference, make_round, make_worker

# Database behaviour (aggregation of battles into ratings): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

MODELS = ("llava", "blip2")
REFERENCE_NAME = "human-verified reference"


@pytest.fixture
def project():
    owner = User.objects.create_user("owner", password="owner-pass-123")
    return create_project(name="Published", slug="published", owner=owner)


@pytest.fixture
def published(shared_data, project):
    """The published single-image rows as instances of the project, with two models' outputs."""
    path = shared_data / "visit_fully_annotated_example.csv"
    import_visitbench_file(path=path, project=project, image_license="CC-BY-4.0")
    rows = list(csv.DictReader(open(path, newline="", encoding="utf-8")))
    for instance in Instance.objects.filter(family__project=project):
        for model in MODELS:
            ModelOutput.objects.create(instance=instance, model_name=model,
                                       text=f"{model} answers: {instance.instruction}")
    return rows


def preference_row(row: dict, model_a: str, model_b: str, chose_a: bool, *, texts=None) -> dict:
    """A row in the published CSV's columns, for one published instance ``row``."""
    text = {model: f"{model} answers: {row['instruction']}" for model in (model_a, model_b)}
    text[REFERENCE_NAME] = row["output_human_annotated"]
    text.update(texts or {})
    return {"image_url": row["image_url"], "instruction": row["instruction"],
            "A": text[model_a], "B": text[model_b], "A_model": model_a, "B_model": model_b,
            "model_selection.A": "TRUE" if chose_a else "FALSE",
            "model_selection.B": "FALSE" if chose_a else "TRUE"}


def write_csv(path: Path, rows: list[dict], columns=PREFERENCE_COLUMNS) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def votes(published) -> list[dict]:
    """Five judgments per pair on the first four instances: llava wins 4 of 5, plus a vote
    against the reference on the first."""
    rows = []
    for row in published[:4]:
        rows += [preference_row(row, "llava", "blip2", chose_a=True)] * 4
        rows.append(preference_row(row, "llava", "blip2", chose_a=False))
    rows.append(preference_row(published[0], "llava", REFERENCE_NAME, chose_a=False))
    return rows


def run_import(path, project="published"):
    out = io.StringIO()
    call_command("import_pairwise_preferences", str(path), "--project", project, stdout=out)
    return out.getvalue()


# --- import -------------------------------------------------------------------------------------


def test_import_matches_rows_to_instances_and_feeds_the_human_ratings(published, project, tmp_path):
    path = write_csv(tmp_path / "visit_bench_human_preferences.csv", votes(published))
    out = run_import(path)
    assert "21 judgments on 4 instances" in out and "21 imported, 0 already present" in out

    stored = list(ImportedPreference.objects.order_by("pk"))
    assert len(stored) == 21
    first = Instance.objects.get(family__project=project, instruction=published[0]["instruction"])
    assert {p.instance_id for p in stored[:5]} == {first.pk}
    assert [p.winner for p in stored[:5]] == ["model_a"] * 4 + ["model_b"]
    assert [p.occurrence for p in stored[:5]] == [1, 2, 3, 4, 1]
    assert (stored[-1].model_b, stored[-1].winner, stored[-1].source_row) == (REFERENCE_NAME, "model_b", 21)

    frame = human_battles()
    assert len(frame) == 21 and list(frame.columns) == ["model_a", "model_b", "winner", "category"]
    assert frame["category"].iloc[0] == published[0]["instruction_category"]
    assert human_battles(origin="imported").equals(frame) and human_battles(origin="collected").empty
    ratings = {m["model"]: m["rating"] for m in compute_ratings(frame, method="bt").to_dict()["models"]}
    assert ratings[REFERENCE_NAME] > ratings["llava"] > ratings["blip2"]

    report = tmp_path / "ratings.json"
    call_command("ratings", "--from-db", "--origin", "imported", "--method", "bt", "--json", str(report),
                 stdout=io.StringIO())
    assert {m["model"] for m in json.loads(report.read_text())["models"]} == {"llava", "blip2", REFERENCE_NAME}


def test_import_is_idempotent_and_a_longer_file_adds_only_the_new_judgments(published, tmp_path):
    rows = votes(published)
    path = write_csv(tmp_path / "prefs.csv", rows)
    run_import(path)
    assert "0 imported, 21 already present" in run_import(path)
    assert ImportedPreference.objects.count() == 21

    longer = rows + [preference_row(published[5], "blip2", "llava", chose_a=True)] * 2 + [rows[0]]
    out = run_import(write_csv(tmp_path / "prefs-v2.csv", longer))
    assert "3 imported, 21 already present" in out
    assert ImportedPreference.objects.count() == 24
    assert ImportedPreference.objects.filter(model_a="llava", model_b="blip2", winner="model_a",
                                             instance__instruction=published[0]["instruction"]).count() == 5


def test_imported_judgments_are_not_crowd_work(published, tmp_path):
    instance = make_instance()
    make_outputs(instance=instance, models=("model-x", "model-y"))
    round_ = make_round(task_type="pairwise", targets=[tuple(instance.model_outputs.all())])
    before = round_progress(round=round_)
    run_import(write_csv(tmp_path / "prefs.csv", votes(published)))
    assert Assignment.objects.count() == 0
    assert round_progress(round=round_) == before
    assert human_battles(origin="collected").empty


@pytest.mark.parametrize(("edit", "message"), [
    (lambda rows: [{k: v for k, v in r.items() if k != "model_selection.B"} for r in rows],
     "prefs.csv, column 'model_selection.B': the header has no such column"),
    (lambda rows: rows[:2] + [{**rows[2], "model_selection.A": "yes"}],
     "prefs.csv, row 3, column 'model_selection.A': expected TRUE or FALSE, got 'yes'"),
    (lambda rows: rows[:1] + [{**rows[1], "model_selection.A": "TRUE", "model_selection.B": "TRUE"}],
     "prefs.csv, row 2, column 'model_selection.A': exactly one of model_selection.A and model_selection.B"),
    (lambda rows: rows[:3] + [{**rows[3], "instruction": "Something nobody asked."}],
     "prefs.csv, row 4, column 'instruction': no instance of the project has this instruction and image URL"),
    (lambda rows: rows[:1] + [{**rows[1], "A": "A different answer."}],
     "prefs.csv, row 2, column 'A': the response differs from the stored output of 'llava' on instance #"),
    (lambda rows: rows[:1] + [{**rows[1], "B_model": "minigpt4"}],
     "prefs.csv, row 2, column 'B_model': instance #\\d+ has no output of model 'minigpt4'"),
    (lambda rows: rows[:1] + [{**rows[1], "B_model": "llava"}],
     "prefs.csv, row 2, column 'B_model': both sides are model 'llava'"),
    (lambda rows: rows[:1] + [{**rows[1], "A": "bad \x00 text"}],
     "prefs.csv, row 2, column 'A': contains a NUL character"),
    (lambda rows: [], "prefs.csv: the file has a header but no data rows"),
])
def test_a_bad_file_names_file_row_and_column_and_imports_nothing(published, tmp_path, edit, message):
    rows = edit(votes(published))
    columns = list(rows[0]) if rows else PREFERENCE_COLUMNS
    path = write_csv(tmp_path / "prefs.csv", rows, columns=columns)
    with pytest.raises(CommandError, match=message):
        run_import(path)
    assert ImportedPreference.objects.count() == 0


def test_import_refuses_other_projects_instances_and_unknown_projects(published, tmp_path):
    path = write_csv(tmp_path / "prefs.csv", votes(published))
    create_project(name="Other", slug="other", owner=User.objects.get(username="owner"))
    with pytest.raises(CommandError, match="row 1, column 'instruction': no instance of the project"):
        run_import(path, project="other")
    with pytest.raises(CommandError, match="No project with slug 'nope'"):
        run_import(path, project="nope")
    (tmp_path / "latin1.csv").write_bytes(",".join(PREFERENCE_COLUMNS).encode() + b"\n\xe9\n")
    with pytest.raises(CommandError, match="latin1.csv: not UTF-8 text"):
        run_import(tmp_path / "latin1.csv")
    assert ImportedPreference.objects.count() == 0


# --- export -------------------------------------------------------------------------------------


def export(*args) -> list[dict]:
    out = Path(args[args.index("--out") + 1])
    call_command("export_battles", *args, stdout=io.StringIO())
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


LEADERBOARD_FIELDS = {"A_model", "B_model", "A", "B", "image_url", "instruction", "instruction_category", "engine",
                      "evaluated_with_reference", "auto_evaluation_result", "auto_evaluation_cot"}


def test_export_of_human_battles_imported_and_collected(published, project, tmp_path):
    run_import(write_csv(tmp_path / "prefs.csv", votes(published)))
    instance = make_instance(family=make_family(project=project))
    make_outputs(instance=instance, models=("model-x", "model-y"))
    # The round belongs to the project, as every round built in the cockpit does.
    round_ = make_round(task_type="pairwise", targets=[tuple(instance.model_outputs.all())], project=project)
    worker = make_worker()
    assignment = request_assignment(round=round_, worker=worker)
    choice = "left" if assignment.presentation["left"] == "b" else "right"  # model-y wins
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})

    lines = export("--source", "human", "--out", str(tmp_path / "human.jsonl"), "--project", "published")
    assert len(lines) == 22 and all(set(line) == LEADERBOARD_FIELDS for line in lines)
    first = lines[0]
    assert (first["A_model"], first["B_model"], first["A"]) == ("llava", "blip2", "llava answers: "
                                                                + published[0]["instruction"])
    assert first["image_url"] == published[0]["image_url"] and first["instruction"] == published[0]["instruction"]
    assert first["instruction_category"] == published[0]["instruction_category"]
    assert first["engine"] == "human" and first["evaluated_with_reference"] is False
    assert first["auto_evaluation_result"] == ["llava", "llava"]
    assert lines[4]["auto_evaluation_result"] == ["blip2", "blip2"]
    assert [cot["cot"] for cot in first["auto_evaluation_cot"]] == [None, None]
    against_reference = lines[20]
    assert against_reference["B"] == published[0]["output_human_annotated"]
    assert against_reference["auto_evaluation_result"] == [REFERENCE_NAME] * 2
    collected = lines[21]
    assert (collected["A_model"], collected["B_model"]) == ("model-x", "model-y")
    assert collected["auto_evaluation_result"] == ["model-y", "model-y"]

    without = export("--source", "human", "--out", str(tmp_path / "h2.jsonl"), "--exclude-reference")
    assert len(without) == 21 and all(REFERENCE_NAME not in (l["A_model"], l["B_model"]) for l in without)


def test_export_of_judge_battles_names_verdicts_and_keeps_both_chains_of_thought(settings, tmp_path):
    other = make_instance(images=2)  # a multi-image instance: image_url is a list
    make_outputs(instance=other, models=("model-x", "model-y"))
    make_reference(instance=other, text="The verified reference.")

    def position_biased(endpoint, body):
        text = body["messages"][-1]["content"]
        if "Response A" not in text:
            return judge_responder(endpoint, body)
        return "Reasoning about both. Overall, Response A is better."  # A in both orders -> tie

    with FakeOpenAIServer(responder=position_biased) as server:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = server.base_url, "", "fake-model"
        call_command("judge", "--models", "model-x,model-y", "--against-reference", stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert JudgedBattle.objects.count() == 3

    lines = export("--source", "judge", "--out", str(tmp_path / "judge.jsonl"))
    assert len(lines) == 3 and all(set(line) == LEADERBOARD_FIELDS for line in lines)
    pair = lines[0]
    assert (pair["A_model"], pair["B_model"]) == ("model-x", "model-y")
    assert (pair["A"], pair["B"]) == ("model-x says something.", "model-y says something.")
    assert pair["engine"] == "fake-model" and pair["evaluated_with_reference"] is False
    assert pair["auto_evaluation_result"] == ["model-x", "model-y"]  # each query chose Response A
    assert [(c["A_model_in_cot"], c["B_model_in_cot"]) for c in pair["auto_evaluation_cot"]] == [
        ("model-x", "model-y"), ("model-y", "model-x")]
    assert all(c["cot"] == "Reasoning about both. Overall, Response A is better." for c in pair["auto_evaluation_cot"])
    assert pair["image_url"] == [link.image.url for link in other.image_links.all()]
    assert pair["instruction"] == other.instruction and pair["instruction_category"] == other.family.name
    against_reference = [line for line in lines if line["B_model"] == "reference"]
    assert len(against_reference) == 2 and against_reference[0]["B"] == "The verified reference."

    assert len(export("--source", "judge", "--out", str(tmp_path / "j2.jsonl"), "--exclude-reference")) == 1
    AcceptedReference.objects.all().delete()  # a side whose text is gone is left out, and said so
    out = io.StringIO()
    call_command("export_battles", "--source", "judge", "--out", str(tmp_path / "j3.jsonl"), stdout=out)
    assert "wrote 1 judge battles" in out.getvalue() and "2 left out" in out.getvalue()


def test_export_errors_write_nothing(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("export_battles", "--source", "judge", "--out", str(tmp_path / "no" / "x.jsonl"))
    with pytest.raises(CommandError, match="No project with slug 'nope'"):
        call_command("export_battles", "--source", "human", "--out", str(tmp_path / "x.jsonl"), "--project", "nope")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="judged battles have no origin"):
        battles(source="judge", origin="imported")
    with pytest.raises(CommandError, match="--origin selects human judgments"):
        call_command("ratings", "--from-db", "--source", "judge", "--origin", "imported", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no pairwise judgments in the database"):
        call_command("ratings", "--from-db", "--origin", "imported", stdout=io.StringIO())
