"""The REST endpoints and the worker pages: authentication, authorisation, 4xx on bad input, escaping."""
import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.rounds import close_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from datasets_app.models import Caption, Image, Instance, Verification

from .factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker_user,
    png_bytes,
)

pytestmark = pytest.mark.django_db

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def client_for(user, *, csrf=False) -> APIClient:
    client = APIClient(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def next_task(client, round):
    return client.post(reverse("annotation-api:next", args=[round.pk]))


def submit(client, assignment_id, data, fmt="json"):
    return client.post(reverse("annotation-api:submit", args=[assignment_id]), data, format=fmt)


def test_endpoints_need_a_logged_in_worker():
    round = make_round(task_type="verification", targets=[make_candidate()])
    assert next_task(APIClient(), round).status_code == 403
    outsider = User.objects.create_user("researcher", password="pw-123456")
    response = next_task(client_for(outsider), round)
    assert response.status_code == 403
    assert "workers group" in response.json()["detail"]
    assert not Assignment.objects.exists()


def test_csrf_is_enforced_for_logged_in_browsers():
    round = make_round(task_type="verification", targets=[make_candidate()])
    response = next_task(client_for(make_worker_user(), csrf=True), round)
    assert response.status_code == 403
    assert not Assignment.objects.exists()


def test_next_task_and_submit_round_trip():
    round = make_round(task_type="verification", targets=[make_candidate(text="Answer <b>bold</b>")])
    client = client_for(make_worker_user())
    body = next_task(client, round).json()
    task = body["assignment"]
    assert task["task_type"] == "verification"
    assert task["task"]["candidate"]["text"] == "Answer <b>bold</b>"
    assert body["progress"] == {"done": 0, "total": 1}
    assert next_task(client, round).json()["assignment"]["id"] == task["id"]

    data = {"outcome": "correct", "harmful": False, "comment": ""}
    first = submit(client, task["id"], data)
    assert first.status_code == 201, first.content
    assert first.json()["stored"] is True
    repeat = submit(client, task["id"], data)
    assert repeat.status_code == 200 and repeat.json()["stored"] is False
    assert repeat.json()["payload"] == first.json()["payload"]
    conflict = submit(client, task["id"], {"outcome": "caption_problem"})
    assert conflict.status_code == 409 and conflict.json()["detail"]
    assert Verification.objects.filter(is_aggregate=False).count() == 1

    done = next_task(client, round).json()
    assert done["assignment"] is None and done["progress"] == {"done": 1, "total": 1}


def test_next_task_answers_the_assignment_with_its_fields_in_order():
    round = make_round(task_type="verification", targets=[make_candidate()])
    client = client_for(make_worker_user())
    task = next_task(client, round).json()["assignment"]
    assignment = Assignment.objects.get(pk=task["id"])
    assert list(task) == ["id", "round", "task_type", "status", "review_status", "accepted_at", "expires_at",
                          "submitted_at", "seconds_left", "payload", "task", "submit_url", "submit_and_next_url",
                          "in_preview", "start_url"]
    assert {key: task[key] for key in ("id", "round", "task_type", "status", "review_status", "submitted_at",
                                       "payload")} == {
        "id": assignment.pk, "round": round.pk, "task_type": "verification", "status": "assigned",
        "review_status": "", "submitted_at": None, "payload": None}
    # ISO 8601 in UTC with a Z, as DRF writes times.
    assert task["expires_at"] == assignment.expires_at.isoformat().replace("+00:00", "Z")
    assert task["accepted_at"].endswith("Z") and 0 < task["seconds_left"] <= round.time_limit_seconds
    assert task["submit_url"] == reverse("annotation-api:submit", args=[assignment.pk])
    assert task["submit_and_next_url"] == reverse("annotation-api:submit-and-next", args=[assignment.pk])
    # An API client that asks for a task takes it: it is not held for a look only.
    assert task["in_preview"] is False and not assignment.in_preview


def _state():
    return list(Assignment.objects.order_by("pk").values_list("status", "payload")), Caption.objects.count()


@pytest.mark.parametrize(
    "task_type, bad_data, status",
    [
        ("ranking", {"order": [1, 2, 3]}, 400),
        ("pairwise", {}, 400),
        ("caption", {"captions": [""]}, 400),
        ("verification", {"outcome": ""}, 400),
    ],
)
def test_bad_submissions_get_a_4xx_with_a_message_and_change_nothing(task_type, bad_data, status):
    instance = make_instance(captions=False)
    targets = {
        "ranking": lambda: [make_review_set()],
        "pairwise": lambda: [tuple(make_outputs(instance=instance))],
        "caption": lambda: [instance],
        "verification": lambda: [make_candidate()],
    }[task_type]()
    round = make_round(task_type=task_type, targets=targets)
    client = client_for(make_worker_user())
    assignment_id = next_task(client, round).json()["assignment"]["id"]
    before = _state()
    response = submit(client, assignment_id, bad_data)
    assert response.status_code == status
    assert response.json()["detail"]
    assert _state() == before


def test_unknown_foreign_and_closed_round_submissions():
    round = make_round(task_type="verification", targets=[make_candidate(), make_candidate()])
    owner, other = client_for(make_worker_user()), client_for(make_worker_user())
    mine = next_task(owner, round).json()["assignment"]["id"]
    next_task(other, round)
    before = _state()
    unknown = submit(owner, 987654, {"outcome": "correct"})
    foreign = submit(other, mine, {"outcome": "correct"})
    # Someone else's assignment is answered exactly like one that does not exist.
    assert unknown.status_code == foreign.status_code == 404
    assert unknown.json() == foreign.json() == {"detail": "Unknown assignment."}
    assert client_for(make_worker_user()).post(
        reverse("annotation-api:return", args=[mine])).json() == foreign.json()
    close_round(round=round)
    closed = submit(owner, mine, {"outcome": "correct"})
    assert closed.status_code == 409 and "closed" in closed.json()["detail"]
    assert next_task(owner, round).status_code == 409
    assert _state() == before


def test_form_encoded_submissions_work_like_the_page_sends_them():
    instance = make_instance(images=2, captions=False)
    round = make_round(task_type="caption", targets=[instance])
    client = client_for(make_worker_user())
    assignment_id = next_task(client, round).json()["assignment"]["id"]
    response = submit(client, assignment_id, {"captions": ["one", "two"]}, fmt="multipart")
    assert response.status_code == 201, response.content
    assert list(Caption.objects.filter(instance=instance).order_by("position").values_list("text", flat=True)) == ["one", "two"]


# --- instruction generation with several images (multipart, as the page sends it) -------------------

IMAGE_FIELDS = {"license": "CC-BY-4.0", "creator": "A. Photographer", "source_url": "https://openverse.org/image/1"}


def multi_image_task(client):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True)])
    body = next_task(client, round).json()
    assert (body["assignment"]["task"]["min_images"], body["assignment"]["task"]["max_images"]) == (2, 10)
    return body["assignment"]["id"]


def rows(*entries):
    """Multipart fields for image rows: each entry is a URL, or bytes uploaded as images-<n>-file."""
    data = {}
    for index, entry in enumerate(entries):
        data.update({f"images-{index}-{name}": value for name, value in IMAGE_FIELDS.items()})
        if isinstance(entry, bytes):
            data[f"images-{index}-url"] = ""
            data[f"images-{index}-file"] = SimpleUploadedFile(f"image{index}.png", entry, content_type="image/png")
        else:
            data[f"images-{index}-url"] = entry
    return data


def test_multi_image_submission_with_two_uploads():
    client = client_for(make_worker_user())
    assignment_id = multi_image_task(client)
    data = {"instruction": "What changed?", **rows(png_bytes("blue", size=(21, 11)), png_bytes("red", size=(22, 12)))}
    response = submit(client, assignment_id, data, fmt="multipart")
    assert response.status_code == 201, response.content
    instance = Instance.objects.get(pk=Assignment.objects.get(pk=assignment_id).result["instance_id"])
    assert [(image.width, image.height) for image in instance.ordered_images()] == [(21, 11), (22, 12)]
    again = {"instruction": "What changed?", **rows(png_bytes("blue", size=(21, 11)), png_bytes("red", size=(22, 12)))}
    repeat = submit(client, assignment_id, again, fmt="multipart")
    assert repeat.status_code == 200 and repeat.json()["stored"] is False
    assert Instance.objects.count() == 1


def test_multi_image_submission_mixing_a_url_and_an_upload():
    client = client_for(make_worker_user())
    assignment_id = multi_image_task(client)
    data = {"instruction": "Before or after?", **rows("https://x.org/before.jpg", png_bytes("green", size=(23, 13)))}
    response = submit(client, assignment_id, data, fmt="multipart")
    assert response.status_code == 201, response.content
    first, second = Instance.objects.get(pk=Assignment.objects.get(pk=assignment_id).result["instance_id"]).ordered_images()
    assert first.url == "https://x.org/before.jpg"
    assert (second.url, second.width) == ("", 23)


@pytest.mark.parametrize(
    "entries, message",
    [
        (("https://x.org/only.jpg",), "This family needs at least 2 images; the submission has 1."),
        (("https://x.org/a.jpg", b"not an image at all"), "Image 2: The image was refused"),
    ],
)
def test_multi_image_submission_refused_with_400_and_nothing_stored(entries, message):
    client = client_for(make_worker_user())
    assignment_id = multi_image_task(client)
    before = (Instance.objects.count(), Image.objects.count())
    response = submit(client, assignment_id, {"instruction": "Q?", **rows(*entries)}, fmt="multipart")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(message)
    assert (Instance.objects.count(), Image.objects.count()) == before
    assert Assignment.objects.get(pk=assignment_id).payload is None


def test_multi_image_page_has_the_image_row_template(client):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True)])
    client.force_login(make_worker_user())
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert 'id="image-rows"' in page and 'data-min-images="2"' in page and 'data-max-images="10"' in page
    assert 'name="images-__prefix__-file"' in page and 'name="image_file"' not in page


def test_multi_image_page_in_japanese(client):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True)], language="ja")
    client.force_login(make_worker_user())
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert "画像を追加" in page and 'data-label="画像 __number__ を削除"' in page


def test_return_gives_the_task_back():
    round = make_round(task_type="verification", targets=[make_candidate()])
    client = client_for(make_worker_user())
    assignment_id = next_task(client, round).json()["assignment"]["id"]
    response = client.post(reverse("annotation-api:return", args=[assignment_id]))
    assert response.status_code == 200
    assert Assignment.objects.get(pk=assignment_id).status == Assignment.Status.RETURNED
    assert client.post(reverse("annotation-api:return", args=[assignment_id])).status_code == 409


# --- pages -----------------------------------------------------------------------------------------


def test_pages_need_a_worker(client):
    round = make_round(task_type="verification", targets=[make_candidate()])
    url = reverse("annotation:round", args=[round.pk])
    assert client.get(url).status_code == 302
    client.force_login(User.objects.create_user("someone", password="pw-123456"))
    assert client.get(url).status_code == 403
    assert client.get(reverse("annotation:work-list")).status_code == 403


def test_work_list_shows_open_rounds_with_progress(client):
    open_round = make_round(task_type="verification", targets=[make_candidate()])
    draft = make_round(task_type="verification", targets=[make_candidate()], open=False)
    client.force_login(make_worker_user())
    page = client.get(reverse("annotation:work-list")).content.decode()
    assert open_round.name in page and draft.name not in page
    assert "You have done 0 of the 1 task this round has for you" in page


@pytest.mark.parametrize("task_type", ["instruction_generation", "caption", "verification", "pairwise", "ranking"])
def test_every_task_page_renders_and_escapes_worker_text(client, task_type):
    instance = make_instance(instruction=XSS, captions=True)
    Caption.objects.filter(instance=instance).update(text=XSS)
    candidate = make_candidate(instance=instance, text=XSS)
    family = make_family(name="Fam " + XSS)
    family.seed_instruction = XSS
    family.save()
    targets = {
        "instruction_generation": [family],
        "caption": [instance],
        "verification": [candidate],
        "pairwise": [tuple(make_outputs(instance=instance))],
        "ranking": [make_review_set(texts=[XSS] * 5)],
    }[task_type]
    round = make_round(task_type=task_type, targets=targets)
    client.force_login(make_worker_user())
    response = client.get(reverse("annotation:round", args=[round.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<script>window.__pwned" not in page
    assert 'onerror="window' not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert 'id="task-form"' in page


def test_task_page_uses_the_round_language(client):
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja")
    client.force_login(make_worker_user())
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert '<html lang="ja">' in page
    assert "送信" in page  # "Submit"


def test_the_page_shows_nothing_left_when_the_round_is_done(client):
    round = make_round(task_type="verification", targets=[make_candidate()])
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"outcome": "correct"})
    client.force_login(user)
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert 'id="no-task"' in page and "You have done 1 task in this round." in page
    assert "There are no more tasks for you in this round." in page


def test_the_page_says_when_every_task_left_is_held_by_someone_else(client):
    """Fails where the page said "no more tasks for you" beside "0 of the 1 task this round has for
    you" while another worker only held the one item."""
    round = make_round(task_type="verification", targets=[make_candidate()])
    request_assignment(round=round, worker=get_or_create_local_worker(user=make_worker_user()))
    client.force_login(make_worker_user())
    page = client.get(reverse("annotation:round", args=[round.pk])).content.decode()
    assert 'id="no-task"' in page and "being worked on by someone else right now" in page
    assert "no more tasks for you" not in page and "You have done 0 tasks in this round." in page


def test_api_messages_follow_the_round_language():
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja")
    client = client_for(make_worker_user())
    assignment_id = next_task(client, round).json()["assignment"]["id"]
    detail = submit(client, assignment_id, {"order": [1]}).json()["detail"]
    assert json.dumps(detail, ensure_ascii=False) != json.dumps("The ranking must contain each of the 5 reviews exactly once.")
    assert "レビュー" in detail
