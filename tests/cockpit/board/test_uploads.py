"""Material uploads on the board: good files are imported into the project; every bad one is
refused with the file, row and field named, and changes nothing."""
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets_app.models import FamilySeedImage, Instance, InstructionFamily, ModelOutput, ReviewSet

from ..conftest import PASSWORD
from .conftest import project_instance

pytestmark = pytest.mark.django_db
S = Instance.Status


@pytest.fixture
def owner_client(client, researcher):
    client.login(username=researcher.username, password=PASSWORD)
    return client


def upload(client, project, what, name, content: bytes | str):
    data = content.encode() if isinstance(content, str) else content
    return client.post(reverse("cockpit:board-upload", args=[project.slug, what]),
                       {f"{what}-file": SimpleUploadedFile(name, data)})


def predictions_csv(instances, model="new-vlm", text=lambda i: f"Answer {i}."):
    lines = [f"instruction,image,{model} prediction"]
    for number, instance in enumerate(instances):
        lines.append(f'"{instance.instruction}",{instance.image_links.get().image.url},"{text(number)}"')
    return "\n".join(lines) + "\n"


@pytest.fixture
def verified(project):
    return [project_instance(project, status=S.VERIFIED) for _ in range(2)]


def test_a_predictions_file_puts_the_model_on_the_board_and_offers_the_judge(owner_client, project, verified):
    response = upload(owner_client, project, "predictions", "preds.csv", predictions_csv(verified))
    assert response.status_code == 302 and response.url == "/projects/study-a/board/judge/?new=new-vlm"
    assert sorted(ModelOutput.objects.filter(model_name="new-vlm").values_list("instance_id", flat=True)) == [
        i.pk for i in verified]
    page = owner_client.get(response.url).content.decode()
    assert "preds.csv: 2 rows, 2 matched to instances" in page
    assert '<strong class="new-model">new-vlm</strong>' in page and "judge_outputs-models" in page


def test_predictions_match_only_the_projects_instances(owner_client, project, verified, make_researcher):
    from projects.services import create_project

    theirs = project_instance(create_project(name="B", slug="b", owner=make_researcher("bob")), status=S.VERIFIED)
    response = upload(owner_client, project, "predictions", "theirs.csv", predictions_csv([theirs]))
    assert response.status_code == 400
    assert "theirs.csv: no row matches an instance of this project" in response.content.decode()
    assert not ModelOutput.objects.exists()


@pytest.mark.parametrize(("name", "content", "message"), [
    ("preds.txt", "instruction,image\n", "preds.txt: expected a .csv file"),
    ("preds.csv", "", "The submitted file is empty"),
    ("preds.csv", "image,new-vlm prediction\nx,y\n", "preds.csv, column &#x27;instruction&#x27;: missing column"),
    ("preds.csv", "instruction,image,m prediction\nWhat?,ftp://example.org/a.png,x\n",
     "preds.csv, row 1, column &#x27;image&#x27;"),
    ("preds.csv", b"instruction,image,m prediction\n\xff\xfe,x,y\n", "preds.csv: not UTF-8 text"),
    ("../../etc/p<b>.csv", "instruction,image\n", "p_b_.csv"),
])
def test_bad_predictions_files_are_refused_and_change_nothing(owner_client, project, verified, name, content,
                                                                message):
    response = upload(owner_client, project, "predictions", name, content)
    body = response.content.decode()
    assert response.status_code == 400 and message in body, body
    assert "<b>" not in body and "/tmp" not in body
    assert not ModelOutput.objects.exists()


def test_a_later_bad_row_leaves_the_earlier_rows_unwritten(owner_client, project, verified):
    content = predictions_csv(verified) + 'What is this?,https://images.example.org/a.png\x07,"x"\n'
    response = upload(owner_client, project, "predictions", "preds.csv", content)
    assert response.status_code == 400 and "preds.csv, row 3" in response.content.decode()
    assert not ModelOutput.objects.exists()


def test_a_file_over_the_size_limit_is_refused(owner_client, project, verified, settings):
    settings.MAX_DATA_UPLOAD_BYTES = 100
    response = upload(owner_client, project, "predictions", "big.csv", predictions_csv(verified) * 3)
    assert response.status_code == 400 and "big.csv: the file is larger than" in response.content.decode()
    assert not ModelOutput.objects.exists()


def test_a_predictions_file_with_more_rows_than_the_bound_is_refused_at_the_first_row_past_it(
        owner_client, project, verified, settings, monkeypatch):
    from datasets_app import model_outputs

    settings.MAX_PREDICTION_ROWS = 4
    checked = []
    real_problem = model_outputs.text_problem
    monkeypatch.setattr(model_outputs, "text_problem", lambda text, **k: checked.append(text) or real_problem(text, **k))
    header, *rows = predictions_csv(verified).splitlines()
    content = "\n".join([header, *(rows * 50)]) + "\n"  # 100 rows, every one of them matching
    response = upload(owner_client, project, "predictions", "many.csv", content)
    body = response.content.decode()
    assert response.status_code == 400 and "many.csv, row 5: more than 4 data rows" in body, body
    assert len(checked) <= 5 * 3 + 3  # the rows after the fifth were never read
    assert not ModelOutput.objects.exists()


def test_a_predictions_file_with_more_model_columns_than_the_bound_is_refused(owner_client, project, verified,
                                                                              settings):
    settings.MAX_PREDICTION_MODELS = 3
    models = [f"m{n} prediction" for n in range(4)]
    instance = verified[0]
    content = ",".join(["instruction", "image", *models]) + "\n" + ",".join(
        [f'"{instance.instruction}"', instance.image_links.get().image.url, *["x"] * 4]) + "\n"
    response = upload(owner_client, project, "predictions", "wide.csv", content)
    body = response.content.decode()
    assert response.status_code == 400 and "wide.csv: 4 prediction columns; at most 3 models" in body, body
    assert not ModelOutput.objects.exists()


def review_line(item="item-1", language="en", url="https://images.example.org/cat.png", **extra):
    record = {"item_id": item, "language": language, "category": "art", "image_url": url, "license": "CC0-1.0",
              "source_url": "https://example.org/cat", "reviews": [f"Review {n}." for n in range(1, 6)]}
    record.update(extra)
    return json.dumps(record)


def test_review_sets_are_imported_into_the_project(owner_client, project):
    content = "\n".join([review_line(), review_line(language="ja")]) + "\n"
    response = upload(owner_client, project, "review-sets", "reviews.jsonl", content)
    assert response.status_code == 302 and response.url == "/projects/study-a/"
    assert ReviewSet.objects.filter(project=project).count() == 2
    review_set = ReviewSet.objects.select_related("image").first()
    assert (review_set.category, review_set.image.license) == ("art", "CC0-1.0")
    assert review_set.image.source_url == "https://example.org/cat"
    page = owner_client.get(response.url).content.decode()
    assert "reviews.jsonl: 2 review sets, 2 created" in page


@pytest.mark.parametrize(("line", "message"), [
    (review_line(language="fr"), "reviews.jsonl, row 2, field &#x27;language&#x27;"),
    (review_line(url="file:///etc/passwd"), "reviews.jsonl, row 2, field &#x27;image_url&#x27;"),
    (review_line(reviews=["only one"]), "reviews.jsonl, row 2, field &#x27;reviews&#x27;"),
    (review_line(image_url="", image_path="../../../etc/hostname"), "reviews.jsonl, row 2"),
    ("{not json", "reviews.jsonl, row 2"),
])
def test_bad_review_files_are_refused_and_change_nothing(owner_client, project, line, message):
    content = review_line(item="good") + "\n" + line + "\n"
    response = upload(owner_client, project, "review-sets", "reviews.jsonl", content)
    assert response.status_code == 400 and message in response.content.decode(), response.content.decode()
    assert not ReviewSet.objects.exists()


def family_line(name="Counting", urls=("https://images.example.org/seed.png",), **extra):
    record = {"name": name, "description": "How many things?", "multi_image": len(urls) > 1,
              "seed_instruction": "How many apples are there?", "seed_response": "There are three apples.",
              "seed_image_urls": list(urls), "license": "CC-BY-4.0"}
    record.update(extra)
    return json.dumps(record)


def test_families_with_their_seed_example_are_created_in_the_project(owner_client, project):
    content = family_line() + "\n" + family_line(name="Comparing", urls=(
        "https://images.example.org/a.png", "https://images.example.org/b.png")) + "\n"
    response = upload(owner_client, project, "families", "families.jsonl", content)
    assert response.status_code == 302
    family = InstructionFamily.objects.get(name="Comparing")
    assert family.project == project and family.is_multi_image and family.seed_response == "There are three apples."
    assert [image.url for image in family.ordered_seed_images()] == [
        "https://images.example.org/a.png", "https://images.example.org/b.png"]
    assert family.ordered_seed_images()[0].license == "CC-BY-4.0"


@pytest.mark.parametrize(("line", "message"), [
    (family_line(name=""), "row 2, field &#x27;name&#x27;: empty value"),
    (family_line(name="Counting"), "row 2, field &#x27;name&#x27;: a family named"),
    (family_line(urls=["https://images.example.org/a.png", "https://images.example.org/b.png"], multi_image=False),
     "row 2, field &#x27;seed_image_urls&#x27;: several seed images"),
    (family_line(urls=["javascript:alert(1)"], name="X"), "row 2, field &#x27;seed_image_urls&#x27;"),
    (family_line(name="Y", multi_image="yes"), "row 2, field &#x27;multi_image&#x27;"),
    (family_line(name="Z", colour="red"), "row 2, field &#x27;colour&#x27;: unknown field"),
    (json.dumps({"name": "W"}), "row 2, field &#x27;seed_instruction&#x27;: missing field"),
    ("[1, 2]", "row 2: a record must be a JSON object"),
])
def test_bad_family_files_are_refused_and_change_nothing(owner_client, project, line, message):
    response = upload(owner_client, project, "families", "families.jsonl", family_line() + "\n" + line + "\n")
    assert response.status_code == 400 and f"families.jsonl, {message}" in response.content.decode(), \
        response.content.decode()
    assert not InstructionFamily.objects.exists() and not FamilySeedImage.objects.exists()


def test_only_owners_upload(client, project, collaborator, verified, make_researcher):
    client.login(username=collaborator.username, password=PASSWORD)
    assert upload(client, project, "predictions", "p.csv", predictions_csv(verified)).status_code == 403
    make_researcher("eve")
    client.login(username="eve", password=PASSWORD)
    assert upload(client, project, "predictions", "p.csv", predictions_csv(verified)).status_code == 404
    assert not ModelOutput.objects.exists()


def test_an_unknown_upload_or_a_missing_file_is_refused(owner_client, project):
    response = owner_client.post(reverse("cockpit:board-upload", args=[project.slug, "weights"]), {})
    assert response.status_code == 404
    response = owner_client.post(reverse("cockpit:board-upload", args=[project.slug, "families"]), {})
    assert response.status_code == 400 and "This field is required" in response.content.decode()


def test_an_uploaded_review_file_cannot_learn_which_paths_exist_on_the_server(owner_client, project, tmp_path):
    """A path that exists and one that does not get the same refusal: the disk is never looked at."""
    existing = tmp_path / "there.png"
    existing.write_bytes(b"not looked at")
    answers = []
    for image_path in (str(existing), str(tmp_path / "missing.png")):
        content = review_line(image_url="", image_path=image_path) + "\n"
        response = upload(owner_client, project, "review-sets", "reviews.jsonl", content)
        assert response.status_code == 400
        answers.append(response.content.decode())
    refusals = [re.search(r"reviews\.jsonl, row \d+[^<]*", answer).group(0) for answer in answers]
    assert "gives each image by image_url" in refusals[0]
    assert refusals[0] == refusals[1] and "not found" not in answers[0] + answers[1]
    assert not ReviewSet.objects.exists()


DEEP_DESCRIPTION = family_line(name="Deep").replace('"How many things?"', "[" * 100_000 + "]" * 100_000)
HUGE_NUMBER = family_line(name="Huge").replace('"multi_image": false', '"multi_image": 1' + "0" * 99_999)
LONE_SURROGATE = family_line(name="Lone", description="\ud800")  # json.dumps writes it as the escape \ud800


@pytest.mark.parametrize(("line", "message"), [
    (DEEP_DESCRIPTION, "row 2, field &#x27;description&#x27;: the JSON is nested more than 20 levels deep"),
    (HUGE_NUMBER, "row 2, field &#x27;multi_image&#x27;: a number in the JSON has more than"),
    (LONE_SURROGATE, "row 2, field &#x27;description&#x27;: a text in the JSON contains a lone surrogate (U+D800)"),
], ids=["deep-description", "100000-digit-multi-image", "lone-surrogate"])
def test_hostile_family_lines_are_a_400_naming_file_row_and_field_not_a_500(owner_client, project, line, message):
    """#26 item 6: a 100,000-deep description, a 100,000-digit multi_image and a lone surrogate answered 500."""
    assert "\\ud800" in LONE_SURROGATE and len(HUGE_NUMBER) > 100_000 and "[" * 100_000 in DEEP_DESCRIPTION
    owner_client.raise_request_exception = False
    response = upload(owner_client, project, "families", "families.jsonl", family_line() + "\n" + line + "\n")
    body = response.content.decode()
    assert response.status_code == 400 and f"families.jsonl, {message}" in body, body[:2000]
    assert not InstructionFamily.objects.exists() and not FamilySeedImage.objects.exists()


@pytest.fixture
def counted_lookups(monkeypatch):
    """The resolver replaced by a table that counts its lookups (every host resolves to one public address)."""
    from datasets_app import image_urls

    lookups = []

    def resolve(host, port):
        lookups.append(host)
        return ["52.216.8.1"]

    monkeypatch.setattr(image_urls, "resolve_host", resolve)
    return lookups


def test_a_family_with_300_seed_urls_is_refused_before_any_lookup(owner_client, project, counted_lookups, settings):
    """#26 item 10: each of 300 seed URLs was resolved in turn (61 s in one request)."""
    assert settings.MAX_SEED_IMAGES_PER_FAMILY == 10
    urls = [f"https://host{number}.example.org/seed.png" for number in range(300)]
    response = upload(owner_client, project, "families", "families.jsonl", family_line(urls=urls) + "\n")
    body = response.content.decode()
    assert response.status_code == 400, body[:2000]
    assert "families.jsonl, row 1, field &#x27;seed_image_urls&#x27;: more than 10 seed images (300 given)" in body
    assert counted_lookups == []
    assert not InstructionFamily.objects.exists() and not FamilySeedImage.objects.exists()


def test_ten_seed_urls_on_one_host_are_one_lookup(owner_client, project, counted_lookups):
    urls = [f"https://images.example.org/seed-{number}.png" for number in range(10)]
    response = upload(owner_client, project, "families", "families.jsonl", family_line(urls=urls) + "\n")
    assert response.status_code == 302
    assert counted_lookups == ["images.example.org"]
    assert len(InstructionFamily.objects.get(name="Counting").ordered_seed_images()) == 10
