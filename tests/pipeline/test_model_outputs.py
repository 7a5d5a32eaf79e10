"""Model outputs: the leaderboard's predictions.csv, and generation through a candidate's endpoint."""
from __future__ import annotations

import csv
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from datasets_app.model_outputs import generate_outputs, import_predictions
from datasets_app.models import Image, Instance, InstanceImage, ModelOutput, Source
from datasets_app.services import import_visitbench_file
from datasets_app.visitbench_csv import VisitBenchFormatError
from fakes.openai_server import message_text
from llm.models import LLMCall
from llm.params import LLMRunParams
from tests.annotation.factories import make_family, make_instance

pytestmark = pytest.mark.django_db


def instance_with_urls(instruction: str, urls: list[str], family=None) -> Instance:
    family = family or make_family(multi=len(urls) > 1)
    instance = Instance.objects.create(
        family=family, instruction=instruction, status=Instance.Status.VERIFIED,
        content_key=Instance.compute_content_key(family.name, instruction, urls),
    )
    for position, url in enumerate(urls):
        image, _ = Image.objects.get_or_create(project=family.project, url=url, defaults={"license": "CC0-1.0"})
        InstanceImage.objects.create(instance=instance, image=image, position=position)
    return instance


def write_csv(path, header: list[str], rows: list[list[str]]):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def two_instances():
    single = instance_with_urls("What is  the dog\n doing?", ["https://img.example.org/dog.jpg"])
    multi = instance_with_urls("Compare the rooms.", ["https://img.example.org/a.jpg", "https://img.example.org/b.jpg"])
    return single, multi


def test_import_matches_rows_by_instruction_and_ordered_images_and_reports_the_rest(tmp_path, two_instances):
    single, multi = two_instances
    path = write_csv(tmp_path / "predictions.csv",
                     ["instruction", "instruction_category", "images", "llava prediction", "otter prediction"], [
        ["What is the dog doing?", "Dogs", json.dumps(["https://img.example.org/dog.jpg"]), "Sitting.", "Running."],
        ["Compare the rooms.", "Rooms", json.dumps(["https://img.example.org/a.jpg", "https://img.example.org/b.jpg"]),
         "The first is bigger.", ""],
        # Images in the other order: a different instance, so unmatched.
        ["Compare the rooms.", "Rooms", json.dumps(["https://img.example.org/b.jpg", "https://img.example.org/a.jpg"]),
         "x", "y"],
        ["Unknown instruction", "X", json.dumps(["https://img.example.org/dog.jpg"]), "x", "y"],
    ])

    report = import_predictions(path=path)

    assert (report.rows, report.matched) == (4, 2)
    assert [(row.row_number, row.reason) for row in report.unmatched] == [
        (3, "no instance has this instruction and these images"),
        (4, "no instance has this instruction and these images"),
    ]
    assert dict(report.per_model["llava"]) == {"created": 2}
    assert dict(report.per_model["otter"]) == {"created": 1, "empty": 1}
    assert ModelOutput.objects.get(instance=single, model_name="otter").text == "Running."
    assert ModelOutput.objects.get(instance=multi, model_name="llava").source == Source.IMPORTED
    assert not ModelOutput.objects.filter(instance=multi, model_name="otter").exists()

    write_csv(path, ["instruction", "instruction_category", "image", "llava prediction"], [
        ["What is the dog doing?", "Dogs", "https://img.example.org/dog.jpg", "Sitting on a sofa."],
    ])
    again = import_predictions(path=path)
    assert dict(again.per_model["llava"]) == {"updated": 1}
    assert ModelOutput.objects.get(instance=single, model_name="llava").text == "Sitting on a sofa."
    assert dict(import_predictions(path=path).per_model["llava"]) == {"unchanged": 1}
    assert ModelOutput.objects.count() == 3


def test_import_of_the_published_multi_image_rows(tmp_path, shared_data):
    import_visitbench_file(path=shared_data / "visit_bench_multi_images.csv")
    with open(shared_data / "visit_bench_multi_images.csv", newline="", encoding="utf-8") as handle:
        published = list(csv.DictReader(handle))[:5]
    path = write_csv(tmp_path / "predictions.csv", ["instruction", "instruction_category", "images", "gpt4 prediction"],
                     [[row["instruction"], row["instruction_category"], row["images"], row["gpt4_prediction"]]
                      for row in published])
    report = import_predictions(path=path, strict=True)
    assert report.matched == 5 and not report.unmatched
    assert ModelOutput.objects.filter(model_name="gpt4").count() == 5


def test_strict_import_with_an_unmatched_row_changes_nothing(tmp_path, two_instances):
    path = write_csv(tmp_path / "p.csv", ["instruction", "image", "m prediction"], [
        ["What is the dog doing?", "https://img.example.org/dog.jpg", "ok"],
        ["Nothing like this", "https://img.example.org/none.jpg", "no"],
    ])
    with pytest.raises(CommandError, match=r"p\.csv: 1 row\(s\) match no instance: row 2: no instance"):
        call_command("import_predictions", str(path), "--strict", stdout=StringIO(), stderr=StringIO())
    assert not ModelOutput.objects.exists()

    out, err = StringIO(), StringIO()
    call_command("import_predictions", str(path), stdout=out, stderr=err)
    assert "2 rows, 1 matched to instances, 1 unmatched" in out.getvalue()
    assert "p.csv, row 2: not imported" in err.getvalue()


GOOD_ROW = {"instruction": "What is the dog doing?", "image": "https://img.example.org/dog.jpg",
            "images": json.dumps(["https://img.example.org/dog.jpg"]), "m prediction": "fine"}


@pytest.mark.parametrize(
    ("header", "bad", "message"),
    [
        (["instruction", "image"], {}, "no '<model name> prediction' column"),
        (["instruction", "m prediction"], {}, "column 'image'"),
        (["instruction", "images", "m prediction"], {"images": "[broken"}, "row 2, column 'images': invalid JSON"),
        (["instruction", "images", "m prediction"], {"images": "[]"}, "row 2, column 'images': expected a non-empty"),
        (["instruction", "image", "m prediction"], {"image": "ftp://x/y.png"}, "row 2, column 'image': not an http"),
        (["instruction", "image", "m prediction"], {"instruction": "  "}, "row 2, column 'instruction': empty value"),
    ],
)
def test_a_bad_predictions_file_names_the_problem_and_imports_nothing(tmp_path, two_instances, header, bad, message):
    # A good first row: the bad second one must stop the whole import.
    rows = [[GOOD_ROW[column] for column in header], [{**GOOD_ROW, **bad}[column] for column in header]]
    path = write_csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(VisitBenchFormatError, match=message):
        import_predictions(path=path)
    assert not ModelOutput.objects.exists()


def test_generate_outputs_sends_images_and_instruction_to_the_candidate_endpoint(fake_server, llm_settings):
    url_instance = make_instance(instruction="What colour is the car?")
    stored_instance = make_instance(instruction="How many birds?", stored_images=True)
    Instance.objects.update(status=Instance.Status.VERIFIED)
    awaiting = make_instance(instruction="Not verified yet.")
    # A separate endpoint: the configured key must not travel there.
    llm_settings.LLM_API_KEY = "secret-of-the-configured-server"

    report = generate_outputs(base_url=fake_server.base_url, llm=LLMRunParams(model="candidate-vlm"))

    assert (report.requested, report.created) == (2, 2)
    bodies = {message_text(r.body["messages"][-1]["content"]): r for r in fake_server.completion_requests}
    assert set(bodies) == {"What colour is the car?", "How many birds?"}
    parts = bodies["What colour is the car?"].body["messages"][-1]["content"]
    assert parts[1]["image_url"]["url"] == url_instance.ordered_images()[0].url
    stored_parts = bodies["How many birds?"].body["messages"][-1]["content"]
    assert stored_parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert all("authorization" not in {k.lower() for k in r.headers} for r in fake_server.completion_requests)
    output = ModelOutput.objects.get(instance=stored_instance, model_name="candidate-vlm")
    assert output.source == Source.LLM and output.text == "You said: How many birds? [1 image]"
    assert not ModelOutput.objects.filter(instance=awaiting).exists()

    again = generate_outputs(base_url=fake_server.base_url, llm=LLMRunParams(model="candidate-vlm"))
    assert (again.skipped_existing, again.created, len(fake_server.completion_requests)) == (2, 0, 2)


def test_generate_outputs_command_with_progress_and_a_failure(fake_server, llm_settings):
    first, second = make_instance(), make_instance()
    Instance.objects.update(status=Instance.Status.VERIFIED)
    fake_server.malform_next(1, kind="no_choices")
    llm_settings.LLM_MAX_CONCURRENCY = 1  # the broken answer goes to the first instance's request
    out, err = StringIO(), StringIO()
    call_command("generate_outputs", "--model", "candidate-vlm", "--name", "Candidate VLM",
                 "--instances", str(first.pk), str(second.pk), stdout=out, stderr=err)
    assert "Candidate VLM: 2 instances, 1 outputs stored" in out.getvalue()
    assert f"instance {first.pk}: no output stored: failed: malformed response" in err.getvalue()
    assert ModelOutput.objects.filter(model_name="Candidate VLM").count() == 1
    assert LLMCall.objects.filter(purpose="visitbench_model_output").count() == 2

    with pytest.raises(CommandError, match="--instances: no instance with id 999"):
        call_command("generate_outputs", "--model", "m", "--instances", str(first.pk), "999", stdout=StringIO())
    with pytest.raises(CommandError, match="--api-key-env: the environment variable NO_SUCH_KEY_VAR is not set"):
        call_command("generate_outputs", "--model", "m", "--base-url", fake_server.base_url,
                     "--api-key-env", "NO_SUCH_KEY_VAR", stdout=StringIO())
