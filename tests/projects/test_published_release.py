"""A release of the published multi-image sheet gives back its verified instances."""
import csv
import json
import math
import subprocess

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from projects.models import Release

pytestmark = pytest.mark.django_db


JSON_COLUMNS = {"images", "images_dense_captions", "images_blip2_captions", "public_images_metadata"}


def comparable(row: dict) -> dict:
    """JSON cells by value (the published file's spacing varies in one cell), NaN as None."""
    def value(column, cell):
        if column not in JSON_COLUMNS:
            return cell
        parsed = json.loads(cell)
        if isinstance(parsed, list):
            return [None if isinstance(v, float) and math.isnan(v) else v for v in parsed]
        return parsed
    return {column: value(column, cell) for column, cell in row.items()}


def published_verified_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle) if row["human_ratings_gpt4_correct"] == "True"]


def test_release_of_the_published_sheet_loads_offline_with_the_published_values(shared_data, tmp_path, load_offline):
    User.objects.create_user("alice")
    call_command("create_project", "visit", "--owner", "alice", "--name", "VisIT-Bench multi-image")
    published = shared_data / "visit_bench_multi_images.csv"
    call_command("import_visitbench", str(published), "--project", "visit", "--image-license", "CC-BY-4.0")
    out = tmp_path / "release"
    call_command("make_release", "visit", "--name", "visit-bench", "--version", "1.0.0", "--out", str(out))

    expected = published_verified_rows(published)
    assert len(expected) == 63  # the paper's 63.0 % kept of 100

    # The CSV in the published schema is the published rows of the verified instances, cell for cell.
    with (out / "visitbench" / "multi_image.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header, written = reader.fieldnames, list(reader)
    with published.open(newline="", encoding="utf-8") as handle:
        assert header == csv.DictReader(handle).fieldnames
    assert [comparable(row) for row in written] == [comparable(row) for row in expected]
    assert not (out / "visitbench" / "single_image.csv").exists()

    loaded = load_offline(out, "instances", "images")
    instances = loaded["instances"]
    assert len(instances) == 63
    for row, published_row in zip(instances, expected):
        assert row["instruction"] == published_row["instruction"]
        assert row["instruction_category"] == published_row["instruction_category"]
        assert row["images"] == json.loads(published_row["images"])
        captions = [c for c in json.loads(published_row["images_dense_captions"])
                    if not (isinstance(c, float) and math.isnan(c))]
        assert row["instruction_conditioned_captions"] == captions
        assert row["reference_output"] == published_row["gpt4_prediction"]
        assert row["reference_origin"] == "verified_candidate"
        assert row["is_multiple_images"] is True
    urls = {url for row in instances for url in row["images"]}
    manifest = {image["url"]: image for image in loaded["images"]}
    assert urls <= set(manifest)
    assert all(manifest[url]["license"] == "CC-BY-4.0" and manifest[url]["included"] for url in urls)

    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "config_name: instances" in card
    assert "| multi_image | 100 | 63.0 | 6.0 | 30.0 |" in card  # the yield table of the paper
    assert "| instruction families | 10 |" in card

    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    listed = {line.split("  ", 1)[1] for line in (out / "SHA256SUMS").read_text().splitlines()}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert listed == on_disk
    release = Release.objects.get()
    assert set(release.files) == on_disk and release.counts["instances"] == 63


def test_images_without_a_license_are_left_out_and_listed(shared_data, tmp_path, load_offline):
    User.objects.create_user("alice")
    call_command("create_project", "visit", "--owner", "alice")
    call_command("import_visitbench", str(shared_data / "visit_bench_multi_images.csv"), "--project", "visit")
    out = tmp_path / "release"
    call_command("make_release", "visit", "--name", "visit-bench", "--out", str(out))

    release = Release.objects.get()
    # All 100 rows are left out: the 63 verified ones for their images, the 37 others as not verified.
    assert release.counts["instances"] == 0 and release.counts["instances_left_out"] == 100
    why = {row["why"]: row["count"] for row in release.counts["left_out_reasons"] if row["what"] == "instances"}
    assert why["image: no license recorded"] == 63 and sum(why.values()) == 100
    assert release.counts["images_excluded"] == release.counts["images"] > 0
    images = load_offline(out, "images")["images"]
    assert images and all(not image["included"] for image in images)
    assert {image["excluded_reason"] for image in images} == {"no license recorded"}
    assert not (out / "visitbench" / "multi_image.csv").exists()
    assert "config_name: instances" not in (out / "README.md").read_text()
