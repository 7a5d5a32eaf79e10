"""A malformed file names the file, row and column, and leaves the database unchanged."""
import csv
import io

import pytest
from django.core.management import CommandError, call_command

from datasets_app.models import Image, Instance, InstructionFamily

# Database behaviour (an import is atomic: a late bad row rolls back the rows before it): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


def rewrite(source, target, *, drop_column=None, edit=None, keep_rows=None):
    """Copy a published file with one change: a dropped column or an edited cell."""
    with open(source, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = [c for c in reader.fieldnames if c != drop_column]
        rows = list(reader)
    if keep_rows is not None:
        rows = rows[:keep_rows]
    if edit:
        row_number, column, value = edit
        rows[row_number - 1][column] = value
    with open(target, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return target


def assert_rejected(path, *fragments):
    before = (Instance.objects.count(), Image.objects.count(), InstructionFamily.objects.count())
    with pytest.raises(CommandError) as error:
        call_command("import_visitbench", str(path), stdout=io.StringIO())
    message = str(error.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    assert (Instance.objects.count(), Image.objects.count(), InstructionFamily.objects.count()) == before
    return message


def test_missing_column(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  drop_column="human_ratings_problem_in_gpt4")
    assert_rejected(bad, "missing column(s): human_ratings_problem_in_gpt4")


def test_bad_json_in_a_list_column_late_in_the_file_changes_nothing(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  edit=(57, "images", '["https://example.org/a.png", '))
    assert_rejected(bad, "row 57", "column 'images'", "invalid JSON")


def test_list_column_holding_an_object(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  edit=(3, "images_blip2_captions", '{"a": 1}'))
    assert_rejected(bad, "row 3", "column 'images_blip2_captions'", "expected a JSON list")


def test_wrong_boolean(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  edit=(12, "human_ratings_gpt4_correct", "yes"))
    assert_rejected(bad, "row 12", "column 'human_ratings_gpt4_correct'", "expected True or False")


def test_contradictory_verification_flags(shared_data, tmp_path):
    # Row 1 is rated correct; also marking a caption problem contradicts it.
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  edit=(1, "human_ratings_problem_in_caption", "True"))
    assert_rejected(bad, "row 1", "several are True")


def test_empty_instruction(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_fully_annotated_example.csv", tmp_path / "bad.csv",
                  edit=(4, "instruction", "   "))
    assert_rejected(bad, "row 4", "column 'instruction'", "empty value")


def test_not_a_url(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_fully_annotated_example.csv", tmp_path / "bad.csv",
                  edit=(2, "image_url", "javascript:alert(1)"))
    assert_rejected(bad, "row 2", "column 'image_url'", "not an http(s) URL")


def test_empty_file(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert_rejected(empty, "empty")


def test_header_only(shared_data, tmp_path):
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv", keep_rows=0)
    assert_rejected(bad, "no data rows")


def test_unknown_schema(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert_rejected(other, "not a VisIT-Bench file")


def test_missing_file(tmp_path):
    assert_rejected(tmp_path / "nowhere.csv", "cannot open file")


def test_family_kind_conflict_rolls_back_the_whole_file(shared_data, tmp_path):
    call_command("import_visitbench", str(shared_data / "visit_fully_annotated_example.csv"),
                 stdout=io.StringIO())
    # A multi-image row claiming a family that exists as single-image, after 20 good rows.
    bad = rewrite(shared_data / "visit_bench_multi_images.csv", tmp_path / "bad.csv",
                  edit=(21, "instruction_category", "Animals"))
    assert_rejected(bad, "row 21", "family 'Animals' is single-image")
