"""Import, export and round trip of the published VisIT-Bench CSVs."""
import csv
import io
import json
import math

import pytest
from django.core.management import CommandError, call_command

from datasets_app.models import (
    AcceptedReference,
    Caption,
    Image,
    Instance,
    InstructionFamily,
    ReferenceCandidate,
    Verification,
)
from datasets_app.visitbench_csv import MULTI_IMAGE_COLUMNS, SINGLE_IMAGE_COLUMNS

# Database behaviour (atomic, idempotent imports and ordered exports): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

MULTI = "visit_bench_multi_images.csv"
SINGLE = "visit_fully_annotated_example.csv"
JSON_COLUMNS = {"images", "images_dense_captions", "images_blip2_captions", "public_images_metadata"}


def parsed_rows(path):
    """Rows with JSON columns decoded and NaN made comparable."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for column in JSON_COLUMNS & row.keys():
            value = json.loads(row[column])
            if isinstance(value, list):
                value = ["<NaN>" if isinstance(v, float) and math.isnan(v) else v for v in value]
            row[column] = value
    return rows


def database_snapshot():
    return {
        model.__name__: model.objects.count()
        for model in (InstructionFamily, Image, Instance, Caption, ReferenceCandidate, Verification,
                      AcceptedReference)
    }


def test_multi_image_import_builds_the_data_model(shared_data):
    call_command("import_visitbench", str(shared_data / MULTI), stdout=io.StringIO())
    assert InstructionFamily.objects.count() == 10
    assert set(InstructionFamily.objects.values_list("is_multi_image", flat=True)) == {True}
    assert Instance.objects.count() == 100
    first = Instance.objects.order_by("id").first()
    images = first.ordered_images()
    assert [i.url for i in images] == [
        "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/450_rcc_clevr_default_006594.png",
        "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/451_rcc_clevr_semantic_006594.png",
    ]
    dense = first.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED).order_by("position")
    assert [c.position for c in dense] == [0, 1]
    assert dense[1].text.startswith("A 3d model of a small matte brownish-yellow cylinder")
    assert first.captions.filter(kind=Caption.Kind.AUTOMATIC).count() == 2
    assert first.dataset_reference == "the tiny cylinder changed to brown"
    assert first.status == Instance.Status.VERIFIED
    assert first.accepted_reference.candidate.model_name == "gpt-4"
    # The published verdicts: 63 correct, 6 caption, 30 response, 1 with no outcome.
    outcomes = Verification.objects.filter(is_aggregate=True)
    assert outcomes.filter(outcome="correct").count() == 63
    assert outcomes.filter(outcome="caption_problem").count() == 6
    assert outcomes.filter(outcome="response_problem").count() == 30
    assert outcomes.filter(outcome="no_outcome").count() == 1
    assert Instance.objects.filter(status="discarded", discard_reason="caption").count() == 6
    assert Instance.objects.filter(status="discarded", discard_reason="response").count() == 30
    assert AcceptedReference.objects.count() == 63


def test_single_image_import(shared_data):
    call_command("import_visitbench", str(shared_data / SINGLE), stdout=io.StringIO())
    assert Instance.objects.count() == 10
    instance = Instance.objects.get(instruction="Tell me about the architectual style of this house")
    assert instance.family.name == "Architectural Styles"
    assert not instance.family.is_multi_image
    assert instance.ordered_images()[0].url.endswith("Architectural Styles/2abb8291e8ca37b1.jpg")
    assert instance.accepted_reference.origin == AcceptedReference.Origin.HUMAN_WRITTEN
    assert instance.accepted_reference.text.startswith("The architectural style of the house")
    assert instance.reference_candidates.count() == 0


def test_import_twice_adds_nothing(shared_data):
    call_command("import_visitbench", str(shared_data / MULTI), stdout=io.StringIO())
    before = database_snapshot()
    out = io.StringIO()
    call_command("import_visitbench", str(shared_data / MULTI), stdout=out)
    assert database_snapshot() == before
    assert "0 instances created, 100 already present" in out.getvalue()


@pytest.mark.parametrize("name,columns,flag", [(MULTI, MULTI_IMAGE_COLUMNS, "--multi-image"),
                                                (SINGLE, SINGLE_IMAGE_COLUMNS, "--single-image")])
def test_export_reproduces_the_published_file_value_for_value(shared_data, tmp_path, name, columns, flag):
    call_command("import_visitbench", str(shared_data / name), stdout=io.StringIO())
    out = tmp_path / "export.csv"
    call_command("export_visitbench", "--out", str(out), flag, stdout=io.StringIO())
    exported, published = parsed_rows(out), parsed_rows(shared_data / name)
    with open(out, newline="", encoding="utf-8") as handle:
        assert next(csv.reader(handle)) == columns
    assert len(exported) == len(published)
    for number, (ours, theirs) in enumerate(zip(exported, published), start=1):
        assert ours == theirs, f"row {number} differs"


def test_exported_file_imports_into_an_empty_database_identically(shared_data, tmp_path):
    call_command("import_visitbench", str(shared_data / MULTI), stdout=io.StringIO())
    first = tmp_path / "first.csv"
    call_command("export_visitbench", "--out", str(first), stdout=io.StringIO())
    Instance.objects.all().delete()
    call_command("import_visitbench", str(first), stdout=io.StringIO())
    second = tmp_path / "second.csv"
    call_command("export_visitbench", "--out", str(second), stdout=io.StringIO())
    assert parsed_rows(first) == parsed_rows(second)
