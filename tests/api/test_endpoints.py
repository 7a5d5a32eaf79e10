"""The researcher API's endpoints: pagination, filters, actions, and refusals of bad or hostile
input (a 4xx with a message, nothing changed)."""
from __future__ import annotations

import random

import pytest

from annotation.models import Assignment, CollectionRound, WorkItem
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, cancel_round, create_round, open_round
from annotation.services.submissions import submit_assignment
from datasets_app.models import Instance, ModelOutput, ReviewSet
from projects.models import Release
from providers.dry_run import simulated_answer
from tests.annotation.factories import make_worker

from .conftest import predictions_csv, write_csv

pytestmark = pytest.mark.django_db


# --- reads: pagination and filters --------------------------------------------------------------


def test_pagination_is_page_numbered_and_bounded(world, owner_api, settings):
    first = owner_api.get("/api/instances/", {"page_size": 3}).json()
    assert first["count"] == 4 + Instance.objects.filter(family__name__in=["Shape questions", "Spot the change"]).count()
    assert len(first["results"]) == 3 and first["next"] and first["previous"] is None
    second = owner_api.get(first["next"]).json()
    assert {i["id"] for i in first["results"]}.isdisjoint({i["id"] for i in second["results"]})
    huge = owner_api.get("/api/instances/", {"page_size": 10**9}).json()
    assert len(huge["results"]) == min(first["count"], settings.API_MAX_PAGE_SIZE)
    beyond = owner_api.get("/api/instances/", {"page": 999})
    assert beyond.status_code == 404 and beyond.json()["detail"]
    assert owner_api.get("/api/instances/", {"page": "x"}).status_code == 404


def test_filters(world, owner_api):
    counting = world["project"].families.get(name="Counting")
    by_family = owner_api.get("/api/instances/", {"family": counting.pk}).json()
    assert by_family["count"] == 2 and {i["family_name"] for i in by_family["results"]} == {"Counting"}
    awaiting = owner_api.get("/api/instances/", {"status": "awaiting_caption"}).json()
    assert awaiting["count"] == 1 and awaiting["results"][0]["status"] == "awaiting_caption"
    japanese = owner_api.get("/api/review-sets/", {"language": "ja"}).json()
    assert japanese["count"] == 1 and japanese["results"][0]["language"] == "ja"
    assert len(japanese["results"][0]["reviews"]) == 5
    assert owner_api.get("/api/model-outputs/", {"model": "model-good"}).json()["count"] == 4
    assert owner_api.get("/api/rounds/", {"status": "complete", "task_type": "pairwise"}).json()["count"] == 1
    assert owner_api.get("/api/rounds/", {"status": "open"}).json()["count"] == 0
    assert owner_api.get("/api/rounds/", {"status": "closed"}).json()["count"] == 0
    assert owner_api.get("/api/items/", {"round": world["round"].pk}).json()["count"] == 2
    assert owner_api.get("/api/submissions/", {"round": world["round"].pk, "status": "submitted"}).json()["count"] == 4
    assert owner_api.get("/api/images/", {"project": "study-a"}).json()["count"] >= 4
    assert owner_api.get("/api/images/", {"project": "elsewhere"}).json()["count"] == 0
    assert owner_api.get("/api/releases/", {"project": "study-a"}).json()["count"] == 1


@pytest.mark.parametrize("query", [{"status": "no-such-status"}, {"family": "abc"}, {"family": "9" * 30}])
def test_a_bad_filter_value_is_a_400_naming_the_field(world, owner_api, query):
    response = owner_api.get("/api/instances/", query)
    assert response.status_code == 400
    assert set(response.json()) == set(query)


@pytest.mark.parametrize("url", ["/api/items/", "/api/submissions/", "/api/model-outputs/"])
@pytest.mark.parametrize("value", ["9" * 30, "-1", "x", "1\x00"])
def test_hostile_filter_values_never_500(world, owner_api, url, value):
    for name in ("round", "instance", "item"):
        response = owner_api.get(url, {name: value})
        assert response.status_code in (200, 400), (url, name, value)


def test_round_lists_show_progress(world, owner_api):
    round = owner_api.get("/api/rounds/").json()["results"][0]
    assert round["project"] == "study-a"
    assert round["progress"]["items"] == 2 and round["progress"]["judgments_counted"] == 4


# --- rounds ---------------------------------------------------------------------------------------


def test_creating_a_round_with_bad_fields_is_refused_and_creates_nothing(world, owner_api):
    before = CollectionRound.objects.count()
    unknown_type = owner_api.post("/api/rounds/", {"project": "study-a", "name": "R", "task_type": "dance"},
                                  format="json")
    assert unknown_type.status_code == 400 and "task_type" in unknown_type.json()["errors"]
    missing = owner_api.post("/api/rounds/", {"project": "study-a"}, format="json")
    assert missing.status_code == 400 and {"name", "task_type"} <= set(missing.json())
    negative = owner_api.post("/api/rounds/", {"project": "study-a", "name": "R", "task_type": "pairwise",
                                               "reward_per_task": "-1"}, format="json")
    assert negative.status_code == 400 and "reward_per_task" in negative.json()
    half_yen = owner_api.post("/api/rounds/", {"project": "study-a", "name": "R", "task_type": "pairwise",
                                               "currency": "JPY", "reward_per_task": "0.50"}, format="json")
    assert half_yen.status_code == 400
    assert half_yen.json()["errors"]["reward_per_task"] == ["JPY amounts have no decimal places."]
    nul = owner_api.post("/api/rounds/", {"project": "study-a\x00", "name": "R", "task_type": "pairwise"},
                         format="json")
    assert nul.status_code == 400
    not_json = owner_api.post("/api/rounds/", "{not json", content_type="application/json")
    assert not_json.status_code == 400
    assert CollectionRound.objects.count() == before


def test_adding_items_refuses_targets_of_other_projects_and_wrong_kinds_atomically(world, owner_api,
                                                                                   make_researcher):
    from projects.services import create_project
    from tests.annotation.factories import make_family, make_instance, make_outputs

    other = create_project(name="Other", slug="other", owner=make_researcher("eve"))
    foreign = make_instance(family=make_family(project=other))
    foreign_a, foreign_b = make_outputs(instance=foreign, models=("x", "y"))
    round = world["round"]
    ours = list(ModelOutput.objects.filter(instance__family__project=world["project"])[:2])
    before = WorkItem.objects.count()

    stolen = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [
        {"output_a": ours[0].pk, "output_b": ours[1].pk}, {"output_a": foreign_a.pk, "output_b": foreign_b.pk},
    ]}, format="json")
    assert stolen.status_code == 404 and "output_a" in stolen.json()["detail"]
    wrong_kind = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [
        {"output_a": ours[0].pk, "output_b": ours[1].pk}, {"review_set": ReviewSet.objects.first().pk},
    ]}, format="json")
    assert wrong_kind.status_code == 400 and wrong_kind.json()["detail"]
    empty = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [{}]}, format="json")
    assert empty.status_code == 400
    huge_id = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [{"output_a": 10**30}]}, format="json")
    assert huge_id.status_code == 400 and "output_a" in str(huge_id.json())
    assert WorkItem.objects.count() == before


def test_adding_items_explicitly_with_a_gold_item(world, owner_api):
    round = world["round"]
    good, bad = (ModelOutput.objects.get(instance__instruction="What is the cheapest dish on the menu?", model_name=m)
                 for m in ("model-good", "model-bad"))
    added = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [
        {"output_a": good.pk, "output_b": bad.pk, "gold_answer": {"winner": "a"}},
    ]}, format="json")
    assert added.status_code == 201 and added.json()["added"] == 1
    item = WorkItem.objects.get(pk=added.json()["item_ids"][0])
    assert (item.output_a, item.output_b, item.is_gold, item.gold_answer) == (good, bad, True, {"winner": "a"})


def test_adding_items_from_a_source_and_its_refusals(world, owner_api, researcher):
    round = create_round(name="Rank", task_type="ranking", project=world["project"], created_by=researcher)
    url = f"/api/rounds/{round.pk}/add-items-from-source/"
    before = WorkItem.objects.count()
    for body, field in [({"source": "model_outputs"}, "model_outputs"), ({"source": "review_sets", "params": {"x": 1}}, "x"),
                        ({"source": "review_sets", "gold_answers": {"9": {"order": []}}}, "no item 9"),
                        ({"source": "review_sets", "params": "all"}, "params")]:
        refused = owner_api.post(url, body, format="json")
        assert refused.status_code == 400 and field in str(refused.json()), body
    assert WorkItem.objects.count() == before
    added = owner_api.post(url, {"source": "review_sets"}, format="json")
    assert added.status_code == 201, added.json()
    assert added.json()["added"] == 1  # the English review set: the round is in English
    cancel_round(round=round)
    closed = owner_api.post(url, {"source": "review_sets"}, format="json")
    assert closed.status_code == 409 and WorkItem.objects.filter(round=round).count() == 1


def test_round_transitions_are_refused_when_illegal(world, owner_api):
    round = world["round"]
    again = owner_api.post(f"/api/rounds/{round.pk}/open/")
    assert again.status_code == 409
    assert "cannot open" in again.json()["detail"]
    assert owner_api.post(f"/api/rounds/{round.pk}/close/").json()["status"] == "closed"
    a, b = ModelOutput.objects.filter(instance__family__project=world["project"])[:2]
    refused = owner_api.post(f"/api/rounds/{round.pk}/add-items/", {"items": [{"output_a": a.pk, "output_b": b.pk}]},
                             format="json")
    assert refused.status_code == 409 and "closed" in refused.json()["detail"]


@pytest.mark.parametrize("provider", ["mturk", "prolific"])
def test_publish_on_the_local_provider_after_a_dry_run(world, owner_api, provider):
    round = world["round"]
    finished = owner_api.post(f"/api/rounds/{round.pk}/publish/", {"provider": "local"}, format="json")
    assert finished.status_code == 409 and "nothing to publish" in finished.json()["detail"]
    # One more item: the round is open again, and that item's two slots are the work still needed.
    instance = round.items.order_by("position").first().output_a.instance
    add_items(round=round, targets=[tuple(ModelOutput.objects.filter(instance=instance).order_by("model_name")[:2])])
    CollectionRound.objects.filter(pk=round.pk).update(reward_per_task="0.50")
    before = (Assignment.objects.count(), list(Assignment.objects.values_list("review_status", flat=True)))
    dry = owner_api.post(f"/api/rounds/{round.pk}/publish/", {"provider": provider, "dry_run": True, "seed": 1},
                         format="json")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["dry_run"] is True and dry.json()["report"][0].startswith(f"DRY RUN on {provider}")
    assert not round.publications.exists()
    assert (Assignment.objects.count(), list(Assignment.objects.values_list("review_status", flat=True))) == before
    published = owner_api.post(f"/api/rounds/{round.pk}/publish/", {"provider": "local"}, format="json")
    assert published.status_code == 200, published.json()
    assert published.json()["tasks_existing"] == 1 and published.json()["publication_status"] == "published"
    unknown = owner_api.post(f"/api/rounds/{round.pk}/publish/", {"provider": "pigeon"}, format="json")
    assert unknown.status_code == 400 and "provider" in unknown.json()
    bad_option = owner_api.post(f"/api/rounds/{round.pk}/publish/",
                                {"provider": "mturk", "options": {"min_approval_rate": "high"}}, format="json")
    assert bad_option.status_code == 400 and "min_approval_rate" in bad_option.json()["options"]


@pytest.mark.parametrize("bad_id", ["0", "-1", "abc", "1e9", "99999999999999999999999", "1%00", "..%2F1"])
def test_hostile_ids_are_404s_never_500s(world, owner_api, bad_id):
    for prefix in ("rounds", "instances", "releases", "submissions", "items", "images", "review-sets"):
        response = owner_api.get(f"/api/{prefix}/{bad_id}/")
        assert response.status_code in (400, 404), (prefix, bad_id)
    assert owner_api.post(f"/api/rounds/{bad_id}/open/").status_code in (400, 404)


# --- submissions ------------------------------------------------------------------------------


def test_bulk_review_goes_through_the_review_path_with_feedback(world, owner_api):
    ids = list(Assignment.objects.filter(round=world["round"]).values_list("pk", flat=True))
    rejected = owner_api.post("/api/submissions/review/", {"ids": ids[:2], "decision": "reject",
                                                           "feedback": "Please read the instructions."}, format="json")
    assert rejected.status_code == 200 and sorted(rejected.json()["done"]) == sorted(ids[:2])
    assert set(Assignment.objects.filter(pk__in=ids[:2]).values_list("review_status", "review_feedback")) == {
        ("rejected", "Please read the instructions.")}
    again = owner_api.post("/api/submissions/review/", {"ids": ids[:2], "decision": "reject"}, format="json")
    assert sorted(again.json()["already"]) == sorted(ids[:2])
    listed = owner_api.get("/api/submissions/", {"review_status": "rejected"}).json()
    assert listed["count"] == 2 and listed["results"][0]["review_feedback"] == "Please read the instructions."


def test_bulk_review_refuses_unknown_ids_and_bad_decisions_and_changes_nothing(world, owner_api):
    ids = list(Assignment.objects.filter(round=world["round"]).values_list("pk", flat=True))
    missing = owner_api.post("/api/submissions/review/", {"ids": [*ids, 987654], "decision": "approve"}, format="json")
    assert missing.status_code == 404 and "987654" in missing.json()["detail"]
    bad = owner_api.post("/api/submissions/review/", {"ids": ids, "decision": "maybe"}, format="json")
    assert bad.status_code == 400 and "decision" in bad.json()
    too_many = owner_api.post("/api/submissions/review/", {"ids": list(range(1, 600)), "decision": "approve"},
                              format="json")
    assert too_many.status_code == 400 and "ids" in too_many.json()
    assert set(Assignment.objects.values_list("review_status", flat=True)) == {"submitted"}


# --- model outputs --------------------------------------------------------------------------------


def test_a_malformed_predictions_file_names_file_row_and_column_and_imports_nothing(world, owner_api, tmp_path):
    before = ModelOutput.objects.count()
    path = write_csv(tmp_path / "mine.csv", ["instruction", "image", "m prediction"],
                     [["How many cups are on the table?", "https://img.example.org/kitchen.jpg", "Three."],
                      ["", "https://img.example.org/street.jpg", "Two."]])
    with open(path, "rb") as upload:
        response = owner_api.post("/api/model-outputs/upload/", {"project": "study-a", "file": upload},
                                  format="multipart")
    assert response.status_code == 400
    assert response.json()["detail"] == "mine.csv, row 2, column 'instruction': empty value"
    assert ModelOutput.objects.count() == before


@pytest.mark.parametrize("name, content, message", [
    ("p.txt", b"instruction,image,m prediction\n", "expected a .csv file"),
    ("p.csv", b"", "file is empty"),
    ("p.csv", b"\xff\xfe\x00garbage", "not UTF-8"),
    ("p.csv", b"instruction,m prediction\nx,y\n", "missing column 'image'"),
])
def test_bad_uploads_are_refused_with_a_message(world, owner_api, tmp_path, name, content, message):
    from django.core.files.uploadedfile import SimpleUploadedFile

    before = ModelOutput.objects.count()
    response = owner_api.post("/api/model-outputs/upload/",
                              {"project": "study-a", "file": SimpleUploadedFile(name, content)}, format="multipart")
    assert response.status_code == 400
    assert message in str(response.json())
    assert ModelOutput.objects.count() == before


def test_an_oversized_upload_is_refused(world, owner_api, settings, tmp_path):
    settings.MAX_DATA_UPLOAD_BYTES = 100
    with open(predictions_csv(tmp_path / "big.csv"), "rb") as upload:
        response = owner_api.post("/api/model-outputs/upload/", {"project": "study-a", "file": upload},
                                  format="multipart")
    assert response.status_code == 400 and "big.csv: the file is larger than" in response.json()["detail"]


def test_predictions_match_only_the_projects_instances(world, owner_api, tmp_path, make_researcher):
    from projects.services import create_project

    from .conftest import token_client

    other = create_project(name="Other", slug="other", owner=make_researcher("eve"))
    path = write_csv(tmp_path / "p.csv", ["instruction", "image", "new prediction"],
                     [["How many cups are on the table?", "https://img.example.org/kitchen.jpg", "3"],
                      ["Nowhere to be found", "https://img.example.org/kitchen.jpg", "?"]])
    with open(path, "rb") as upload:
        elsewhere = token_client(other.memberships.get().user).post(
            "/api/model-outputs/upload/", {"project": "other", "file": upload}, format="multipart")
    assert elsewhere.status_code == 400 and "no row matches an instance of this project" in elsewhere.json()["detail"]
    assert not ModelOutput.objects.filter(model_name="new").exists()
    with open(path, "rb") as upload:
        ours = owner_api.post("/api/model-outputs/upload/", {"project": "study-a", "file": upload}, format="multipart")
    assert ours.status_code == 201 and ours.json()["matched"] == 1
    assert ours.json()["unmatched"] == [{"row_number": 2, "reason": "no instance has this instruction and these images"}]


# --- evaluations ----------------------------------------------------------------------------------


def test_ratings_from_judge_battles_and_refusals(world, owner_api):
    judge = owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "source": "judge"})
    assert judge.status_code == 404 and "LLM judge" in judge.json()["detail"]
    assert owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "method": "magic"}).status_code == 400
    assert owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "bootstrap": 10**6}).status_code == 400
    assert owner_api.get("/api/evaluations/ratings/").status_code == 400
    unknown_round = owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "round": 424242})
    assert unknown_round.status_code == 404
    reference = owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "reference": "nobody"})
    assert reference.status_code == 400 and "nobody" in reference.json()["detail"]
    one_round = owner_api.get("/api/evaluations/ratings/", {"project": "study-a", "round": world["round"].pk,
                                                            "bootstrap": 20})
    assert one_round.status_code == 200 and {m["model"] for m in one_round.json()["models"]} == {"model-good",
                                                                                                    "model-bad"}


def test_the_irr_report_of_a_projects_ranking_round(world, owner_api):
    missing = owner_api.get("/api/evaluations/irr-report/", {"project": "study-a"})
    assert missing.status_code == 404 and "no submitted rankings" in missing.json()["detail"]
    round = create_round(name="Rank", task_type="ranking", project=world["project"], workers_per_item=3)
    add_items(round=round, targets=list(ReviewSet.objects.filter(project=world["project"], language="en")))
    open_round(round=round)
    rng = random.Random(3)
    for _ in range(3):
        worker = make_worker()
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            submit_assignment(assignment_id=assignment.pk, worker=worker,
                                    data=simulated_answer(assignment=assignment, rng=rng, accuracy=1.0))
    report = owner_api.get("/api/evaluations/irr-report/", {"project": "study-a", "threshold": 0.5})
    assert report.status_code == 200, report.json()
    assert report.json()["threshold"] == 0.5 and report.json()["summary"]["items"] == 1
    wrong_round = owner_api.get("/api/evaluations/irr-report/", {"project": "study-a", "round": world["round"].pk})
    assert wrong_round.status_code == 400 and "not a ranking round" in wrong_round.json()["detail"]
    assert owner_api.get("/api/evaluations/irr-report/", {"project": "study-a", "threshold": 2}).status_code == 400


# --- releases ------------------------------------------------------------------------------------


def test_release_refusals_change_nothing(world, owner_api):
    before = Release.objects.count()
    again = owner_api.post("/api/releases/", {"project": "study-a", "name": "study", "version": "0.1.0"}, format="json")
    assert again.status_code == 409 and "never change" in again.json()["detail"]
    for name in ("../escape", "a/b", ".hidden", ""):
        bad = owner_api.post("/api/releases/", {"project": "study-a", "name": name, "version": "1"}, format="json")
        assert bad.status_code == 400, name
    assert Release.objects.count() == before


@pytest.mark.parametrize("path", ["../../../etc/passwd", "..%2F..%2Fsecret", "data/../../x", "README.md/../..",
                                  "nothing.csv", "%00"])
def test_release_downloads_serve_listed_files_only(world, owner_api, path):
    release = world["release"]
    response = owner_api.get(f"/api/releases/{release.pk}/files/{path}")
    assert response.status_code == 404


def test_a_release_file_downloads_with_its_checksum(world, owner_api):
    import hashlib

    release = world["release"]
    response = owner_api.get(f"/api/releases/{release.pk}/files/release.json")
    assert response.status_code == 200
    assert hashlib.sha256(b"".join(response.streaming_content)).hexdigest() == release.files["release.json"]["sha256"]
