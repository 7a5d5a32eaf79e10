"""docs/api.md's worked example, step by step, with a token from the cockpit's token page."""
from __future__ import annotations

import hashlib
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import CollectionRound
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import ModelOutput
from tests.annotation.factories import make_worker
from tests.cockpit.conftest import PASSWORD

from .conftest import MODELS, predictions_csv

pytestmark = pytest.mark.django_db


def get_token(researcher) -> str:
    """Step 1: the cockpit's API tokens page shows a new token once."""
    browser = Client()
    assert browser.login(username=researcher.username, password=PASSWORD)
    page = browser.post("/projects/api-tokens/", {"create": "1", "name": "worked example"})
    assert page.status_code == 200
    return re.search(r'<code id="new-token">([^<]+)</code>', page.content.decode()).group(1)


def judge(round: CollectionRound, *, workers: int = 3) -> None:
    """What the crowd does between opening and closing: local workers prefer model-good."""
    for _ in range(workers):
        worker = make_worker()
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            good_side = "a" if assignment.item.side_a_name == "model-good" else "b"
            choice = "left" if assignment.presentation["left"] == good_side else "right"
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})


def test_the_worked_example_of_docs_api_md(study, researcher, tmp_path):
    token = get_token(researcher)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    # Which projects may I use?
    projects = api.get("/api/projects/").json()
    assert [(p["slug"], p["role"]) for p in projects["results"]] == [("study-a", "owner")]

    # Upload the candidate models' predictions (the leaderboard's predictions.csv).
    with open(predictions_csv(tmp_path / "predictions.csv"), "rb") as upload:
        report = api.post("/api/model-outputs/upload/", {"project": "study-a", "file": upload}, format="multipart")
    assert report.status_code == 201, report.json()
    assert report.json()["matched"] == 4 and report.json()["unmatched"] == []
    assert report.json()["per_model"] == {model: {"created": 4} for model in MODELS}

    # Create a pairwise round and add its items from the model outputs: every pair on every instance.
    created = api.post("/api/rounds/", {
        "project": "study-a", "name": "Leaderboard battles", "task_type": "pairwise",
        "workers_per_item": 3, "reward_per_task": "0.10", "budget_cap": "5.00",
    }, format="json")
    assert created.status_code == 201, created.json()
    round_id = created.json()["id"]
    assert created.json()["status"] == "draft"
    added = api.post(f"/api/rounds/{round_id}/add-items-from-source/",
                     {"source": "model_outputs", "params": {"sampler": "all_pairs", "seed": 1}}, format="json")
    assert added.status_code == 201, added.json()
    assert added.json()["added"] == 4
    assert added.json()["balance"]["per_model"] == {"model-bad": 4, "model-good": 4}

    # Open it; workers judge.
    opened = api.post(f"/api/rounds/{round_id}/open/")
    assert opened.status_code == 200 and opened.json()["status"] == "open"
    judge(CollectionRound.objects.get(pk=round_id))
    progress = api.get(f"/api/rounds/{round_id}/").json()["progress"]
    assert progress["items_completed"] == 4 and progress["judgments_counted"] == 12

    # Review the submissions (approve them all) and close the round.
    submitted = api.get("/api/submissions/", {"round": round_id, "review_status": "submitted", "page_size": 100}).json()
    assert submitted["count"] == 12
    review = api.post("/api/submissions/review/", {
        "ids": [s["id"] for s in submitted["results"]], "decision": "approve", "feedback": "Thank you!",
    }, format="json")
    assert review.status_code == 200 and len(review.json()["done"]) == 12 and review.json()["failed"] == []
    assert api.post(f"/api/rounds/{round_id}/close/").json()["status"] == "closed"

    # Read the leaderboard.
    board = api.get("/api/evaluations/ratings/", {"project": "study-a", "method": "bt"})
    assert board.status_code == 200, board.json()
    assert [row["model"] for row in board.json()["models"]] == ["model-good", "model-bad"]
    assert sum(row["battles"] for row in board.json()["models"]) == 2 * 12

    # Make a release and download it, checking every file against SHA256SUMS.
    release = api.post("/api/releases/", {"project": "study-a", "name": "study-a", "version": "1.0.0"}, format="json")
    assert release.status_code == 201, release.json()
    sums = api.get(release.json()["checksums_url"])
    assert sums.status_code == 200
    listed = {}
    for line in b"".join(sums.streaming_content).decode().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.lstrip("*")] = digest
    assert set(listed) == {f["path"] for f in release.json()["files"]}
    assert "visitbench/single_image.csv" in listed
    for entry in release.json()["files"]:
        body = b"".join(api.get(entry["url"]).streaming_content)
        assert hashlib.sha256(body).hexdigest() == listed[entry["path"]] == entry["sha256"]
    assert ModelOutput.objects.filter(instance__family__project=study).count() == 8
