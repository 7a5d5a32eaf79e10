"""One license vocabulary for uploads, imports and releases, and what a release leaves out and why."""
import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.task_types import get_task_type
from datasets_app.file_errors import InputFileError
from datasets_app.models import Image, InstructionFamily, Instance, ReviewSet
from datasets_app.services import import_review_sets_file
from datasets_app.uploads import UploadRefused, import_families_upload
from projects.models import Release
from projects.services import create_project
from releases_app.services import make_release
from tests.annotation.factories import (
    make_family,
    make_instance,
    make_reference,
    make_review_set,
    make_round,
    make_worker,
)
from tests.cockpit.conftest import make_researcher, project, researcher  # noqa: F401
from tests.pipeline.test_model_outputs import write_csv

pytestmark = pytest.mark.django_db

SINGLE_IMAGE_HEADER = ["image_url", "image_dense_caption", "instruction_category", "instruction",
                       "output_human_annotated"]


def single_image_csv(path, rows=3):
    return write_csv(path, SINGLE_IMAGE_HEADER, [
        [f"https://img.example.org/{n}.jpg", f"A photo {n}.", "Counting", f"How many cups are in photo {n}?",
         f"There are {n} cups."] for n in range(rows)])


def verified(instance):
    instance.status = Instance.Status.VERIFIED
    instance.save()
    make_reference(instance=instance, text=f"Reference {instance.pk}.")
    return instance


def test_pdm_1_0_images_offered_on_the_upload_page_are_kept_in_a_release(tmp_path):
    owner = User.objects.create_user("alice")
    project = create_project(name="Crowd", slug="crowd", owner=owner)
    family = make_family(project=project)
    round = make_round(task_type="instruction_generation", targets=[family], project=project)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    offered = get_task_type("instruction_generation").context(assignment)["licenses"]
    assert "PDM-1.0" in offered
    outcome = submit_assignment(assignment_id=assignment.pk, worker=worker, data={
        "instruction": "What is written on the sign?", "image_url": "https://img.example.org/sign.jpg",
        "license": "PDM-1.0", "creator": "A. Photographer", "source_url": "https://openverse.org/image/1"})
    instance = verified(Instance.objects.get(pk=outcome.assignment.result["instance_id"]))
    assert instance.ordered_images()[0].license == "PDM-1.0"
    # Every other license the page offers is kept too.
    for license in offered:
        other = verified(make_instance(family=family))
        Image.objects.filter(pk=other.image_links.get().image_id).update(license=license)

    release = make_release(project=project, name="crowd", version="1.0.0", out_dir=tmp_path / "release")

    assert release.counts["instances"] == 1 + len(offered)
    assert release.counts["images_excluded"] == 0 and release.counts["instances_left_out"] == 0


def test_import_with_image_license_spelled_cc_by_4_0_is_normalised_and_released(tmp_path):
    User.objects.create_user("alice")
    call_command("create_project", "visit", "--owner", "alice")
    call_command("import_visitbench", str(single_image_csv(tmp_path / "single.csv")), "--project", "visit",
                 "--image-license", "CC BY 4.0", stdout=io.StringIO())
    assert set(Image.objects.values_list("license", flat=True)) == {"CC-BY-4.0"}
    # The other usual spellings name the same license.
    call_command("import_visitbench", str(single_image_csv(tmp_path / "again.csv", rows=4)), "--project", "visit",
                 "--image-license", "cc-by-4.0", stdout=io.StringIO())
    assert set(Image.objects.values_list("license", flat=True)) == {"CC-BY-4.0"}

    out = io.StringIO()
    call_command("make_release", "visit", "--name", "visit", "--out", str(tmp_path / "release"), stdout=out)

    release = Release.objects.get()
    assert release.counts["instances"] == 4 and release.counts["images_excluded"] == 0
    images = [json.loads(line) for line in (tmp_path / "release" / "data" / "images.jsonl").read_text().splitlines()]
    assert {image["license"] for image in images} == {"CC-BY-4.0"} and all(image["included"] for image in images)
    assert "4 instances" in out.getvalue()


def test_an_unknown_license_is_refused_naming_the_accepted_ids(tmp_path, researcher):  # noqa: F811
    from tests.api.conftest import token_client

    project = create_project(name="Visit", slug="visit", owner=researcher)
    path = single_image_csv(tmp_path / "single.csv")

    with pytest.raises(CommandError) as refused:
        call_command("import_visitbench", str(path), "--project", "visit", "--image-license", "Flickr license")
    message = str(refused.value)
    assert "Flickr license" in message and "--image-license" in message
    for accepted in ("CC0-1.0", "PDM-1.0", "CC-BY-4.0", "CC-BY-SA-4.0", "CC-BY-NC-4.0"):
        assert accepted in message
    assert not Instance.objects.exists() and not Image.objects.exists()

    reviews = tmp_path / "reviews.csv"
    write_csv(reviews, ["item_id", "language", "category", "image_url", "license",
                        *(f"review_{rank}" for rank in range(1, 6))],
              [["set-1", "en", "art", "https://img.example.org/a.jpg", "CC BY 4.0", *"abcde"],
               ["set-2", "en", "art", "https://img.example.org/b.jpg", "my own license", *"abcde"]])
    with pytest.raises(InputFileError) as refused:
        import_review_sets_file(path=reviews, project=project)
    assert refused.value.row == 2 and refused.value.column == "license"
    assert "my own license" in str(refused.value) and "CC-BY-4.0" in str(refused.value)
    assert not ReviewSet.objects.exists()

    families = SimpleUploadedFile("families.jsonl", json.dumps({
        "name": "Signs", "seed_instruction": "Read it.", "seed_response": "It says STOP.",
        "seed_image_urls": ["https://img.example.org/stop.jpg"], "license": "All rights reserved"}).encode())
    with pytest.raises(UploadRefused) as refused:
        import_families_upload(project=project, upload=families)
    assert refused.value.status_code == 400
    assert "families.jsonl, row 1, field 'license': unknown license 'All rights reserved'" in refused.value.message
    assert "PDM-1.0" in refused.value.message
    assert not InstructionFamily.objects.exists()

    # The API's image filter takes the same vocabulary.
    api = token_client(researcher)
    refused = api.get("/api/images/", {"license": "Flickr license"})
    assert refused.status_code == 400 and "CC-BY-4.0" in refused.json()["detail"]
    assert api.get("/api/images/", {"license": "CC BY 4.0"}).status_code == 200


def test_a_release_says_what_it_left_out_and_why(tmp_path, client, researcher, project):  # noqa: F811
    family = make_family(project=project)
    kept = verified(make_instance(family=family))
    restricted = verified(make_instance(family=family))
    Image.objects.filter(pk=restricted.image_links.get().image_id).update(license="CC-BY-NC-4.0")
    unlicensed = verified(make_instance(family=family))
    Image.objects.filter(pk=unlicensed.image_links.get().image_id).update(license="")
    discarded = make_instance(family=family)
    discarded.status, discarded.discard_reason = Instance.Status.DISCARDED, Instance.DiscardReason.RESPONSE
    discarded.save()
    make_instance(family=family)  # awaiting verification
    unranked, restricted_set = make_review_set(), make_review_set()
    ReviewSet.objects.filter(pk__in=[unranked.pk, restricted_set.pk]).update(project=project)
    Image.objects.filter(pk=restricted_set.image_id).update(license="CC-BY-NC-4.0")

    out = io.StringIO()
    call_command("make_release", "study-a", "--name", "study", "--out", str(tmp_path / "release"), stdout=out)
    output = out.getvalue()

    release = Release.objects.get()
    assert release.counts["instances"] == 1
    assert release.counts["instances_left_out"] == 4 and release.counts["irr_items_left_out"] == 2
    expected = [  # (what, why, how many)
        ("instances", "image: license CC-BY-NC-4.0 does not allow publishing", 1),
        ("instances", "image: no license recorded", 1),
        ("instances", "not verified (discarded: response)", 1),
        ("instances", "not verified (awaiting_verification)", 1),
        ("IRR items", "image: license CC-BY-NC-4.0 does not allow publishing", 1),
        ("IRR items", "not ranked by the crowd", 1),
        ("images", "license CC-BY-NC-4.0 does not allow publishing", 2),
        ("images", "no license recorded", 1),
    ]
    for what, why, count in expected:
        assert f"{what}: {count} {why}" in output, (what, why, output)

    card = (tmp_path / "release" / "README.md").read_text(encoding="utf-8")
    for what, why, count in expected:
        assert f"| {what} | {why} | {count} |" in card, (what, why)

    rows = [json.loads(line) for line in (tmp_path / "release" / "data" / "left_out.jsonl").read_text().splitlines()]
    by_id = {(row["kind"], row["id"]): (row["reason"], row["detail"]) for row in rows}
    assert by_id[("instance", restricted.pk)] == ("license_not_publishable", "CC-BY-NC-4.0")
    assert by_id[("instance", discarded.pk)] == ("not_verified", "discarded: response")
    assert by_id[("irr_item", unranked.pk)] == ("not_ranked", "")
    assert ("instance", kept.pk) not in by_id and len(rows) == 4 + 2 + 3

    client.force_login(researcher)
    page = client.get(reverse("cockpit:releases", args=["study-a"])).content.decode()
    left_out = page.split('class="data compact left-out"')[1].split("</table>")[0]
    for what, why, count in expected:
        assert f"<td>{what}</td><td>{why}</td><td>{count}</td>" in left_out, (what, why)


def test_stored_license_spellings_are_normalised_by_the_data_migration():
    import importlib

    from django.apps import apps

    from projects.services import unassigned_project

    migration = importlib.import_module("datasets_app.migrations.0003_normalise_image_license_spellings")
    spellings = {"CC BY 4.0": "CC-BY-4.0", "cc0": "CC0-1.0", "Public Domain Mark 1.0": "PDM-1.0",
                 "CC BY-NC 4.0": "CC-BY-NC-4.0", "": "", "Flickr license": "Flickr license"}
    project = unassigned_project()
    images = {Image.objects.create(project=project, url=f"https://img.example.org/{n}.jpg", license=value).pk:
              expected for n, (value, expected) in enumerate(spellings.items())}
    migration.normalise(apps, None)
    assert dict(Image.objects.values_list("pk", "license")) == images
