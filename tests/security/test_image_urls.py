"""One rule for image URLs: worker submissions, import_visitbench and import_predictions."""
from __future__ import annotations

import csv
import json
import socket

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from datasets_app import image_urls
from datasets_app.image_urls import ImageURLRefused, check_image_url, encode_url
from datasets_app.models import Image, Instance, ModelOutput
from datasets_app.review_generation import image_source
from tests.annotation.factories import make_family, make_round, make_worker_user

PUBLIC = "52.216.8.1"
# Host name -> addresses, as a resolver would answer; names not listed do not resolve.
DNS = {
    "images.example.org": [PUBLIC],
    "visit-instruction-tuning.s3.amazonaws.com": [PUBLIC],
    "rebind.example.org": [PUBLIC, "10.0.0.7"],
    "internal.example.org": ["192.168.1.20"],
    "metadata.example.org": ["169.254.169.254"],
    "v6.example.org": ["::1"],
    "mapped.example.org": ["::ffff:127.0.0.1"],
}


def table_resolver(host, port):
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return DNS[host]


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch):
    monkeypatch.setattr(image_urls, "resolve_host", table_resolver)


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:5432/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/iam/", "link-local"),
    ("http://localhost:6379/", "local host name"),
    ("http://db.localhost/", "local host name"),
    ("http://metadata.google.internal/computeMetadata/v1/", "local host name"),
    ("http://10.1.2.3/a.png", "private"),
    ("http://172.16.0.1/a.png", "private"),
    ("http://192.168.0.10/a.png", "private"),
    ("http://100.100.100.200/latest/meta-data/", "not a public address"),
    ("http://[::1]:8000/a.png", "loopback"),
    ("http://[fd00:ec2::254]/latest/", "private"),
    ("http://224.0.0.1/a.png", "multicast"),
    ("http://0.0.0.0:8000/", "unspecified"),
    ("http://2130706433/a.png", "loopback"),        # 127.0.0.1 written as one number
    ("http://0x7f.1/a.png", "loopback"),
    ("http://internal.example.org/a.png", "private"),
    ("http://metadata.example.org/a.png", "link-local"),
    ("http://rebind.example.org/a.png", "private"),  # one bad address is enough
    ("http://v6.example.org/a.png", "loopback"),
    ("http://mapped.example.org/a.png", "loopback"),
    ("ftp://images.example.org/a.png", r"not an http\(s\) URL"),
    ("javascript:alert(1)", r"not an http\(s\) URL"),
    ("https://user:secret@images.example.org/a.png", "user name or password"),
    ("https://images.example.org/a\x00.png", "NUL"),
    ("https://images.example.org:99999/a.png", "malformed"),
    ("https://" + "a" * 1000 + ".org/", "longer than"),
])
def test_the_rule_refuses_non_public_and_malformed_urls(url, reason):
    for allow_unresolvable in (False, True):
        with pytest.raises(ImageURLRefused, match=reason):
            check_image_url(url, allow_unresolvable=allow_unresolvable)


def test_unresolvable_hosts_are_refused_for_submissions_and_accepted_for_imports():
    with pytest.raises(ImageURLRefused, match="cannot be found"):
        check_image_url("https://nowhere.example.org/a.png", allow_unresolvable=False)
    assert check_image_url("https://nowhere.example.org/a.png", allow_unresolvable=True)


def test_published_urls_with_spaces_are_accepted_and_percent_encoded_where_used():
    url = "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/514_irfl_metaphor_homework stress.jpg"
    assert check_image_url(url, allow_unresolvable=False) == url
    encoded = encode_url(url)
    assert encoded.endswith("/514_irfl_metaphor_homework%20stress.jpg")
    assert encode_url(encoded) == encoded
    image = Image(url=url)
    assert image.display_url == encoded and image_source(image) == encoded


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://127.0.0.1:5432/", "http://169.254.169.254/latest/meta-data/",
                                 "http://localhost:6379/", "http://192.168.1.1/x.png",
                                 "https://nowhere.example.org/a.png"])
def test_worker_submissions_with_a_non_public_image_url_are_refused(url):
    client = APIClient()
    client.force_login(make_worker_user())
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "What is shown?", "image_url": url, "license": "CC0-1.0", "creator": "Jane",
        "source_url": "https://openverse.org/image/1"}, format="json")
    assert response.status_code == 400
    assert "The image URL is not a valid image URL" in response.json()["detail"]
    assert not Instance.objects.filter(source="crowd").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:5432/", "画像の URL が公開されていないアドレスを指しています（127.0.0.1: 127.0.0.1 はループバックアドレスです）"),
    ("ftp://images.example.org/a.png", "http(s) の URL ではありません: 'ftp://images.example.org/a.png'"),
    ("https://nowhere.example.org/a.png", "画像の URL のホスト（nowhere.example.org）が見つかりません"),
])
def test_a_worker_reading_japanese_is_told_in_japanese_why_an_image_url_was_refused(url, expected):
    """Fails where the reason stays in English inside the Japanese sentence around it."""
    client = APIClient()
    client.force_login(make_worker_user())
    # A Japanese round: a worker who listed no languages reads crowdbench's text in the round's.
    round = make_round(task_type="instruction_generation", targets=[make_family()], language="ja")
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "何が写っていますか?", "image_url": url, "license": "CC0-1.0", "creator": "Jane",
        "source_url": "https://openverse.org/image/1"}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert expected in detail and "is not a valid image URL" not in detail, detail


@pytest.mark.django_db
def test_worker_submission_with_a_public_url_with_spaces_is_accepted():
    client = APIClient()
    client.force_login(make_worker_user())
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "What is shown?", "image_url": "https://images.example.org/a cat.png",
        "license": "CC0-1.0", "creator": "Jane", "source_url": "https://openverse.org/image/1"}, format="json")
    assert response.status_code == 201, response.content


# --- URLs that browsers read differently from urllib (#26 item 9) -------------------------------

BACKSLASH_URL = "http://127.0.0.1\\.example.com/x.png"  # a browser's host: 127.0.0.1


@pytest.mark.parametrize("url, reason", [
    (BACKSLASH_URL, "backslash"),
    ("http://images.example.org\\@127.0.0.1/x.png", "backslash"),
    ("https://images.example.org/a\\b.png", "backslash"),
    ("http://%31%32%37.0.0.1/x.png", "characters a host name cannot have"),  # browsers decode the host
    ("http://\uff11\uff12\uff17.0.0.1/x.png", "loopback"),  # full-width digits: 127.0.0.1 to a browser
    ("http://127\u30020\u30020\u30021/x.png", "loopback"),  # ideographic full stops
    ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/x.png", "local host name"),
])
def test_urls_a_browser_reads_with_another_host_are_refused_in_import_mode_too(url, reason):
    for allow_unresolvable in (True, False):
        with pytest.raises(ImageURLRefused, match=reason):
            check_image_url(url, allow_unresolvable=allow_unresolvable)


def test_international_and_underscore_host_names_are_still_accepted():
    for url in ("https://b\u00fccher.example/a.png", "https://my_bucket.example.org/a.png"):
        assert check_image_url(url, allow_unresolvable=True) == url


@pytest.mark.django_db
def test_the_backslash_url_of_the_issue_is_refused_by_import_visitbench_naming_row_and_column(tmp_path):
    visitbench = tmp_path / "single.csv"
    with open(visitbench, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_url", "image_dense_caption", "instruction_category", "instruction",
                         "output_human_annotated"])
        writer.writerow(["https://images.example.org/ok.png", "A cat.", "Pets", "What is it?", "A cat."])
        writer.writerow([BACKSLASH_URL, "A dog.", "Pets", "What is it?", "A dog."])
    with pytest.raises(CommandError, match=r"row 2, column 'image_url': .*backslash"):
        call_command("import_visitbench", str(visitbench))
    assert not Instance.objects.exists() and not Image.objects.exists()


@pytest.mark.django_db
def test_a_worker_submission_with_the_backslash_url_of_the_issue_is_refused():
    client = APIClient()
    client.force_login(make_worker_user())
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "What is shown?", "image_url": BACKSLASH_URL, "license": "CC0-1.0", "creator": "Jane",
        "source_url": "https://openverse.org/image/1"}, format="json")
    assert response.status_code == 400 and "backslash" in response.json()["detail"], response.content
    assert not Instance.objects.filter(source="crowd").exists()


# --- imports of the published files ------------------------------------------------------------


def write_predictions(path, rows, *, column="images"):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["instruction", "instruction_category", column, "m1 prediction"])
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.django_db
def test_published_multi_image_urls_import_and_match_predictions_by_their_published_spelling(shared_data, tmp_path):
    published = shared_data / "visit_bench_multi_images.csv"
    call_command("import_visitbench", str(published))
    with open(published, newline="", encoding="utf-8") as handle:
        source_rows = list(csv.DictReader(handle))
    spaced = [row for row in source_rows if any(" " in url for url in json.loads(row["images"]))]
    assert len(spaced) == 2
    rows = [{"instruction": row["instruction"], "instruction_category": row["instruction_category"],
             "images": row["images"], "m1 prediction": f"answer {number}"}
            for number, row in enumerate(source_rows, start=1)]
    # The same images written percent-encoded match too.
    rows[0]["images"] = json.dumps([encode_url(url) for url in json.loads(rows[0]["images"])])
    rows.append({"instruction": "An instruction no instance has", "instruction_category": "x",
                 "images": json.dumps(["https://images.example.org/none.png"]), "m1 prediction": "lost"})
    predictions = tmp_path / "predictions.csv"
    write_predictions(predictions, rows)
    with pytest.raises(CommandError) as refused:
        call_command("import_predictions", str(predictions), "--strict")
    message = str(refused.value)
    assert f"row {len(rows)}: no instance" in message and "1 row(s) match no instance" in message
    assert not ModelOutput.objects.exists()
    rows.pop()
    write_predictions(predictions, rows)
    call_command("import_predictions", str(predictions), "--strict")
    assert ModelOutput.objects.count() == len(source_rows)
    for row in spaced:
        instance = Instance.objects.get(instruction=row["instruction"])
        assert [image.url for image in instance.ordered_images()] == json.loads(row["images"])


@pytest.mark.django_db
def test_published_single_image_urls_with_spaces_import_and_match(shared_data, tmp_path):
    published = shared_data / "visit_fully_annotated_example.csv"
    call_command("import_visitbench", str(published))
    with open(published, newline="", encoding="utf-8") as handle:
        source_rows = list(csv.DictReader(handle))
    assert sum(" " in row["image_url"] for row in source_rows) == 5
    predictions = tmp_path / "predictions.csv"
    write_predictions(predictions, [
        {"instruction": row["instruction"], "instruction_category": row["instruction_category"],
         "image": row["image_url"], "m1 prediction": "an answer"} for row in source_rows], column="image")
    call_command("import_predictions", str(predictions), "--strict")
    assert ModelOutput.objects.count() == len(source_rows)


@pytest.mark.django_db
@pytest.mark.parametrize("url, reason", [("http://127.0.0.1:5432/x.png", "loopback"),
                                         ("http://169.254.169.254/latest/meta-data/", "link-local"),
                                         ("http://localhost:6379/", "local host name"),
                                         ("http://internal.example.org/a.png", "private")])
def test_imports_refuse_non_public_urls_naming_row_and_column(tmp_path, url, reason):
    visitbench = tmp_path / "single.csv"
    with open(visitbench, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_url", "image_dense_caption", "instruction_category", "instruction",
                         "output_human_annotated"])
        writer.writerow(["https://images.example.org/ok.png", "A cat.", "Pets", "What is it?", "A cat."])
        writer.writerow([url, "A dog.", "Pets", "What is it?", "A dog."])
    with pytest.raises(CommandError, match=rf"row 2, column 'image_url': .*{reason}"):
        call_command("import_visitbench", str(visitbench))
    assert not Instance.objects.exists() and not Image.objects.exists()
    predictions = tmp_path / "predictions.csv"
    write_predictions(predictions, [{"instruction": "Q", "instruction_category": "", "image": url,
                                     "m1 prediction": "a"}], column="image")
    with pytest.raises(CommandError, match=rf"row 1, column 'image': .*{reason}"):
        call_command("import_predictions", str(predictions))
    assert not ModelOutput.objects.exists()
