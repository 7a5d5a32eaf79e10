import io
import json

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from datasets_app.models import Image, Review, ReviewSet

# Database behaviour (atomic imports): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

EN = ["An objective, reasonable review.", "A subjective but reasonable one.", "Objective but wrong.",
      "Subjective and unreasonable.", "Subjective with an error."]
JA = ["客観的で妥当なレビュー。", "主観的だが妥当。", "客観的だが不適切。", "主観的で不適切。", "主観的で誤りを含む。"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def write_csv(path, rows):
    import csv

    columns = ["item_id", "language", "category", "image_url", "image_path"] + [f"review_{i}" for i in range(1, 6)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return path


def row(item_id, language, texts, **extra):
    base = {"item_id": item_id, "language": language, "category": "food",
            "image_url": f"https://example.org/{item_id}.jpg", "image_path": ""}
    base.update({f"review_{i}": t for i, t in enumerate(texts, start=1)})
    base.update(extra)
    return base


def test_csv_import_in_english_and_japanese_is_idempotent(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", [row("img-1", "en", EN), row("img-1", "ja", JA)])
    call_command("import_reviews", str(path), stdout=io.StringIO())
    assert ReviewSet.objects.count() == 2
    japanese = ReviewSet.objects.get(external_id="img-1", language="ja")
    assert [r.text for r in japanese.reviews.order_by("prompt_rank")] == JA
    # Both languages share the one image.
    assert Image.objects.count() == 1
    out = io.StringIO()
    call_command("import_reviews", str(path), stdout=out)
    assert "0 created, 2 already present" in out.getvalue()
    assert Review.objects.count() == 10


def test_jsonl_import_with_a_local_image_file(tmp_path):
    PILImage.new("RGB", (4, 4), "blue").save(tmp_path / "photo.png")
    lines = [
        {"item_id": "a", "language": "en", "category": "art", "image_path": "photo.png",
         "license": "CC-BY-4.0", "creator": "Ada",
         "reviews": [{"prompt_rank": 5 - i, "text": t} for i, t in enumerate(reversed(EN))]},
        {"item_id": "b", "language": "ja", "image_url": "https://example.org/b.jpg", "reviews": JA},
    ]
    path = tmp_path / "reviews.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines), encoding="utf-8")
    call_command("import_reviews", str(path), stdout=io.StringIO())
    first = ReviewSet.objects.get(external_id="a")
    assert [r.text for r in first.reviews.all()] == EN
    assert first.image.file and first.image.license == "CC-BY-4.0" and first.image.width == 4
    assert ReviewSet.objects.get(external_id="b").reviews.get(prompt_rank=3).text == JA[2]


@pytest.mark.parametrize("bad_row,fragments", [
    (row("x", "fr", EN), ["row 2", "field 'language'", "one of en, ja"]),
    (row("x", "en", EN[:4] + [""]), ["row 2", "field 'review_5'", "missing or empty"]),
    (row("x", "en", EN, image_url="ftp://x"), ["row 2", "field 'image_url'", "not an http(s) URL"]),
    (row("x", "en", EN, image_path="photo.png"), ["row 2", "exactly one of image_url and image_path"]),
    (row("good", "en", EN), ["row 2", "field 'item_id'", "already appears in row 1"]),
])
def test_bad_rows_name_row_and_field_and_change_nothing(tmp_path, bad_row, fragments):
    path = write_csv(tmp_path / "reviews.csv", [row("good", "en", EN), bad_row])
    with pytest.raises(CommandError) as error:
        call_command("import_reviews", str(path), stdout=io.StringIO())
    for fragment in fragments:
        assert fragment in str(error.value), str(error.value)
    assert ReviewSet.objects.count() == 0 and Image.objects.count() == 0


def test_an_image_file_that_is_not_an_image_is_rejected(tmp_path):
    (tmp_path / "fake.png").write_text("<script>alert(1)</script>")
    path = write_csv(tmp_path / "reviews.csv", [row("x", "en", EN, image_url="", image_path="fake.png")])
    with pytest.raises(CommandError, match="row 1, field 'image_path': the file is not a readable image"):
        call_command("import_reviews", str(path), stdout=io.StringIO())
    assert ReviewSet.objects.count() == 0


def test_jsonl_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"item_id": "a", "language": "en", "image_url": "https://e.org/a", "reviews": ["x"]}\n')
    with pytest.raises(CommandError, match="row 1, field 'reviews': expected a list of 5 reviews"):
        call_command("import_reviews", str(path), stdout=io.StringIO())
    path.write_text("{not json\n")
    with pytest.raises(CommandError, match="row 1: invalid JSON"):
        call_command("import_reviews", str(path), stdout=io.StringIO())
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(CommandError, match="empty"):
        call_command("import_reviews", str(empty), stdout=io.StringIO())
