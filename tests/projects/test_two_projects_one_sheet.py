"""Two projects hold the same published data side by side, and neither sees the other's: names are
unique per project, lookups stay inside the project, no page, API answer or refusal names the other
project's data; the demo touches only its own project."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import CollectionRound, WorkItem
from datasets_app.models import Image, Instance, InstructionFamily, ReviewSet
from datasets_app.services import import_visitbench_file
from projects.models import Project
from projects.services import create_project
from projects.tokens import create_token
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)
from tests.annotation.factories import make_review_set
from tests.cockpit.conftest import make_researcher  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

MULTI_SHEET = "visit_bench_multi_images.csv"


def family_jsonl(name: str) -> bytes:
    return (f'{{"name": "{name}", "seed_instruction": "What is shown?", "seed_response": "A cat.", '
            '"seed_image_urls": ["https://images.example.org/seed.png"], "license": "CC0-1.0"}\n').encode()


REVIEW_SETS = ("item_id,language,category,image_url,license,review_1,review_2,review_3,review_4,review_5\n"
               "shared-1,en,art,https://images.example.org/shared-1.png,CC0-1.0,a,b,c,d,e\n").encode()


def upload(client, project, what: str, name: str, content: bytes):
    return client.post(reverse("cockpit:board-upload", args=[project.slug, what]),
                       {f"{what}-file": SimpleUploadedFile(name, content)})


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_token(user=user)[1]}")
    return client


def test_the_same_published_sheet_imports_into_two_projects(client, make_researcher, shared_data, tmp_path):
    alice, bob = make_researcher("alice"), make_researcher("bob")
    mine = create_project(name="Alice study", slug="alice-study", owner=alice)
    theirs = create_project(name="Bob secret study", slug="bob-secret", owner=bob)
    sheet = shared_data / MULTI_SHEET
    first = import_visitbench_file(path=sheet, project=theirs, image_license="CC-BY-4.0")
    second = import_visitbench_file(path=sheet, project=mine, image_license="CC-BY-4.0")
    assert first.created == second.created > 0 and second.skipped_existing == 0
    assert second.families_created == first.families_created and second.images_created == first.images_created
    again = import_visitbench_file(path=sheet, project=mine)  # idempotent within the project
    assert again.created == 0 and again.skipped_existing == second.rows
    for project in (mine, theirs):
        assert Instance.objects.filter(family__project=project).count() == first.created
    # Each project has its own image rows, and every link stays inside its project.
    my_images = set(Image.objects.filter(project=mine).values_list("pk", flat=True))
    their_images = set(Image.objects.filter(project=theirs).values_list("pk", flat=True))
    assert len(my_images) == len(their_images) == first.images_created and not my_images & their_images
    assert set(Instance.images.through.objects.filter(instance__family__project=mine)
               .values_list("image_id", flat=True)) == my_images
    # The commands that read a project's instances read that project's only.
    def exported(*options) -> list[dict]:
        out = tmp_path / "export.csv"
        call_command("export_visitbench", "--out", str(out), "--multi-image", *options, stdout=io.StringIO())
        with out.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    assert exported("--project", mine.slug) == exported("--project", theirs.slug)
    assert len(exported("--project", mine.slug)) == first.created and len(exported()) == 2 * first.created
    table = io.StringIO()
    call_command("yield_report", "--json", "--project", mine.slug, stdout=table)
    multi = json.loads(table.getvalue())["splits"]["multi_image"]
    assert (multi["candidates"], multi["kept_pct"]) == (first.created, 63.0)

    # Alice's API answers hold none of Bob's families, instances or images.
    api = api_client(alice)
    their_family = InstructionFamily.objects.filter(project=theirs).first()
    their_instance = Instance.objects.filter(family__project=theirs).first()
    for endpoint, their_pk, my_count in (
            ("families", their_family.pk, InstructionFamily.objects.filter(project=mine).count()),
            ("instances", their_instance.pk, first.created),
            ("images", min(their_images), len(my_images))):
        listed = api.get(f"/api/{endpoint}/", {"page_size": 1000}).json()
        assert listed["count"] == my_count, endpoint
        assert api.get(f"/api/{endpoint}/{their_pk}/").status_code == 404
        assert api.get(f"/api/{endpoint}/", {"project": theirs.slug}).json()["count"] == 0
    for answer in (api.get("/api/images/", {"page_size": 1000}), api.get("/api/families/", {"page_size": 1000})):
        assert theirs.slug not in answer.content.decode()

    # A family name and a review set that exist only in Bob's project are accepted in Alice's.
    client.force_login(bob)
    assert upload(client, theirs, "families", "families.jsonl", family_jsonl("Only in Bob's")).status_code == 302
    assert upload(client, theirs, "review-sets", "sets.csv", REVIEW_SETS).status_code == 302
    client.force_login(alice)
    assert upload(client, mine, "families", "families.jsonl", family_jsonl("Only in Bob's")).status_code == 302
    assert upload(client, mine, "review-sets", "sets.csv", REVIEW_SETS).status_code == 302
    assert mine.families.filter(name="Only in Bob's").exists()
    assert mine.review_sets.get(external_id="shared-1").image.project == mine
    # A name taken in her own project is refused, naming her file and the name, nothing of Bob's.
    refused = upload(client, mine, "families", "again.jsonl", family_jsonl("Only in Bob's"))
    page = refused.content.decode()
    assert refused.status_code == 400 and "again.jsonl" in page and "already exists" in page
    assert "Bob" not in page.replace("Only in Bob&#x27;s", "") and theirs.slug not in page
    # Her pages name nothing of Bob's project, and his board is not found.
    for url in (f"/projects/{mine.slug}/", "/projects/"):
        page = client.get(url).content.decode()
        assert theirs.slug not in page and theirs.name not in page
    assert client.get(f"/projects/{theirs.slug}/").status_code == 404


def test_load_demo_ranks_only_its_own_review_sets(make_researcher):
    other = create_project(name="Other", slug="other", owner=make_researcher("olga"))
    theirs = [make_review_set(language=language, project=other) for language in ("en", "ja", "en", "ja")]
    call_command("load_demo", stdout=io.StringIO())
    demo = Project.objects.get(slug="demo")
    ranking = CollectionRound.objects.filter(project=demo, task_type="ranking")
    assert ranking.count() == 2
    ranked = set(WorkItem.objects.filter(round__in=ranking).values_list("review_set", flat=True))
    assert ranked == set(ReviewSet.objects.filter(project=demo).values_list("pk", flat=True))
    assert not ranked & {review_set.pk for review_set in theirs}
    # Nothing of the demo reaches the other project's rows, and the other project's rows are as they were.
    assert not WorkItem.objects.filter(round__project=demo, review_set__project=other).exists()
    assert set(other.review_sets.values_list("pk", flat=True)) == {review_set.pk for review_set in theirs}
    assert not CollectionRound.objects.filter(project=other).exists()
