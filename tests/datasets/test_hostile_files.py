"""Hostile text in imported files (NUL, lone surrogates in JSON escapes, control characters, invisible-only
text, over-long values, JSON nested too deeply) is refused naming file, row and column; nothing changes."""
import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from datasets_app.models import ModelOutput, ReviewSet

from .test_bad_files import assert_rejected, rewrite

# Database behaviour (atomic imports; text PostgreSQL refuses (NUL) must never reach it): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]
MULTI = "visit_bench_multi_images.csv"
SINGLE = "visit_fully_annotated_example.csv"


@pytest.mark.parametrize("source, edit, fragments", [
    (MULTI, (4, "instruction", "What is\x00this?"), ["row 4", "column 'instruction'", "NUL character"]),
    (MULTI, (5, "gpt4_prediction", "Answer \x1b[31m"), ["row 5", "column 'gpt4_prediction'", "U+001B"]),
    (MULTI, (6, "instruction", "\u200b\u200b \ufeff"), ["row 6", "column 'instruction'", "empty value"]),
    (MULTI, (7, "instruction_category", "f" * 201), ["row 7", "column 'instruction_category'",
                                                     "longer than 200 characters (201 given)"]),
    (MULTI, (8, "images_blip2_captions", '["a \\ud800 caption"]'), ["row 8", "column 'images_blip2_captions'",
                                                                   "lone surrogate"]),
    (MULTI, (9, "images_dense_captions", '["cap\\u0000tion"]'), ["row 9", "column 'images_dense_captions'", "NUL"]),
    (MULTI, (10, "public_images_metadata", "[" * 5000 + "]" * 5000), ["row 10", "column 'public_images_metadata'",
                                                                       "nested more than"]),
    (SINGLE, (3, "image_dense_caption", "cap\x7ftion"), ["row 3", "column 'image_dense_caption'", "U+007F"]),
    (SINGLE, (2, "image_url", "https://images.example.org/a\x01.png"), ["row 2", "column 'image_url'", "U+0001"]),
])
def test_import_visitbench_refuses_hostile_cells(shared_data, tmp_path, source, edit, fragments):
    bad = rewrite(shared_data / source, tmp_path / "bad.csv", edit=edit)
    assert_rejected(bad, *fragments)


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("header, row, fragments", [
    (["instruction", "image", "m1 prediction"], ["Q\x00", "https://x.org/a.png", "a"], ["row 1", "'instruction'", "NUL"]),
    (["instruction", "image", "m1 prediction"], ["Q", "https://x.org/a.png", "a\x08"], ["row 1", "'m1 prediction'", "U+0008"]),
    (["instruction", "image", "m1 prediction"], ["\u200b", "https://x.org/a.png", "a"], ["row 1", "'instruction'", "empty value"]),
    (["instruction", "image", "x" * 201 + " prediction"], ["Q", "https://x.org/a.png", "a"],
     ["longer than 200 characters"]),
    (["instruction", "images", "m1 prediction"], ["Q", "[" * 3000 + "]" * 3000, "a"], ["row 1", "'images'"]),
])
def test_import_predictions_refuses_hostile_cells(tmp_path, header, row, fragments):
    path = write_csv(tmp_path / "predictions.csv", header, [row])
    with pytest.raises(CommandError) as refused:
        call_command("import_predictions", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    for fragment in fragments:
        assert fragment in str(refused.value), str(refused.value)
    assert not ModelOutput.objects.exists()


REVIEW_HEADER = ["item_id", "language", "category", "image_url", "review_1", "review_2", "review_3", "review_4",
                 "review_5"]
REVIEWS = ["One.", "Two.", "Three.", "Four.", "Five."]


@pytest.mark.parametrize("row, fragments", [
    (["i1", "en", "art", "https://x.org/a.png", "One\x00.", *REVIEWS[1:]], ["row 1", "'review_1'", "NUL"]),
    (["i" * 201, "en", "art", "https://x.org/a.png", *REVIEWS], ["row 1", "'item_id'", "longer than 200"]),
    (["i1", "en", "art", "https://x.org/a.png", "\u200b\u2060", *REVIEWS[1:]], ["row 1", "'review_1'", "missing or empty"]),
    (["i1", "en", "art", "http://10.0.0.1/a.png", *REVIEWS], ["row 1", "'image_url'", "private"]),
])
def test_import_reviews_refuses_hostile_csv_cells(tmp_path, row, fragments):
    path = write_csv(tmp_path / "reviews.csv", REVIEW_HEADER, [row])
    with pytest.raises(CommandError) as refused:
        call_command("import_reviews", str(path), stdout=io.StringIO())
    for fragment in fragments:
        assert fragment in str(refused.value), str(refused.value)
    assert not ReviewSet.objects.exists()


@pytest.mark.parametrize("line, fragments", [
    (json.dumps({"item_id": "i1", "language": "en", "image_url": "https://x.org/a.png", "reviews": ["\ud800"] * 5}),
     ["row 1", "lone surrogate"]),
    ('{"item_id": "i1", "deep": ' + "[" * 5000 + "]" * 5000 + "}", ["row 1", "nested more than"]),
    (json.dumps({"item_id": "i1", "language": "en", "image_url": "https://x.org/a.png",
                 "reviews": [{"prompt_rank": r, "text": "ok\x0c"} for r in range(1, 6)]}), ["row 1", "U+000C"]),
])
def test_import_reviews_refuses_hostile_json_lines(tmp_path, line, fragments):
    path = tmp_path / "reviews.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_reviews", str(path), stdout=io.StringIO())
    for fragment in fragments:
        assert fragment in str(refused.value), str(refused.value)
    assert not ReviewSet.objects.exists()
