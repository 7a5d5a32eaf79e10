"""Only work the provider confirms counts: entries forged with a real study or HIT id and made-up
participant, session, assignment or worker ids complete nothing, enter no evaluation or release and
are never paid; sync reports them. Honest work through the fakes counts."""
from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, WorkItem
from annotation.selectors import pairwise_battles, ranking_judgments
from annotation.task_types.ranking import shown_order
from projects.services import create_project
from providers import services
from providers.models import Publication
from providers.mturk.models import HIT
from providers.mturk.provider import ANSWERS_FIELD, MTurkProvider, encode_answers
from providers.prolific.provider import ProlificProvider, completion_code
from releases_app.services import make_release
from tests.annotation.factories import make_review_set, make_round

pytestmark = pytest.mark.django_db
SANDBOX = "https://workersandbox.mturk.com"


def page_and_token(url: str) -> tuple[Assignment, str, str]:
    page = Client().get(url)
    assert page.status_code == 200, page.content
    html = page.content.decode()
    token = re.search(r'data-task-token="([^"]+)"', html).group(1)
    action = re.search(r'<form id="task-form"[^>]*action="([^"]+)"', html, re.S).group(1)
    assignment = Assignment.objects.get(pk=int(re.search(r"/assignments/(\d+)/", action).group(1)))
    return assignment, token, action


def save(action: str, token: str, data: dict):
    return Client().post(action, data, content_type="application/json", HTTP_X_TASK_TOKEN=token)


def unreachable_at_arrival(fake, settings):
    """Prolific cannot be reached when the next entry is checked: the task is held briefly, unconfirmed."""
    fake.fail_next(count=settings.PROLIFIC_MAX_ATTEMPTS, operation="GET /api/v1/submissions/{id}/")


def rank_on_prolific(round, *, participant: str, study: str, session: str):
    """A participant's visit to the study link and the save of a full-agreement ranking."""
    assignment, token, action = page_and_token(
        f"/work/prolific/{round.pk}/?PROLIFIC_PID={participant}&STUDY_ID={study}&SESSION_ID={session}")
    saved = save(action, token, {"order": shown_order(assignment, sorted(assignment.presentation["review_order"]))})
    assert saved.status_code == 201, saved.content  # the save itself is accepted: it is the worker's answer
    assignment = Assignment.objects.get(pk=assignment.pk)
    # The completion code only for a session Prolific confirms.
    assert ("complete?cc=" in saved.json().get("redirect_url", "")) == (assignment.confirmation == "confirmed")
    return assignment


@pytest.fixture
def ranking_project(prolific_fake):
    owner = User.objects.create_user("owner")
    project = create_project(name="IRR study", slug="irr-study", owner=owner)
    review_sets = []
    for _ in range(2):
        review_set = make_review_set(stored_images=True, project=project)
        review_sets.append(review_set)
    round = make_round(task_type="ranking", targets=review_sets, workers_per_item=3,
                       reward_per_task=Decimal("1.50"), project=project)
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    return project, round, Publication.objects.get(round=round).external_id


def test_forged_prolific_participants_count_for_nothing(prolific_fake, ranking_project, tmp_path, settings):
    project, round, study_id = ranking_project
    first, second = WorkItem.objects.filter(round=round).order_by("position")
    # Three honest participants: Prolific made their submissions when they started the study.
    honest = []
    for _ in range(3):
        started = prolific_fake.start_submission(study_id)
        query = dict(part.split("=", 1) for part in urlsplit(started["study_url"]).query.split("&"))
        honest.append(rank_on_prolific(round, participant=query["PROLIFIC_PID"], study=study_id,
                                       session=query["SESSION_ID"]))
        prolific_fake.complete_submission(started["id"], code=completion_code(round))
    assert {a.confirmation for a in honest} == {"confirmed"}  # one lookup at the save, no sync needed
    first.refresh_from_db()
    assert first.completed_at is not None  # honest work completes its item at submit time

    # Three made-up participants with the real study id, arriving while Prolific cannot be reached
    # (made-up sessions it can check are refused at arrival: test_forged_work), fill the next item.
    forged = []
    for n in range(1, 4):
        unreachable_at_arrival(prolific_fake, settings)
        forged.append(rank_on_prolific(round, participant=f"FAKEPID{n}", study=study_id, session=f"FAKESESSION{n}"))
    assert {a.item_id for a in forged} == {second.pk}
    assert {a.confirmation for a in forged} == {"forged"}
    second.refresh_from_db()
    assert second.completed_at is None and second.aggregate_result is None
    # Forged work holds no slot: the item is still open to real participants.
    assert Assignment.objects.holding_a_slot().filter(item=second).count() == 0

    rankings = ranking_judgments(round)
    assert set(rankings["work_item_id"]) == {first.pk} and rankings["annotator_id"].nunique() == 3
    assert not {f"FAKEPID{n}" for n in range(1, 4)} & set(rankings["annotator_id"].astype(str))

    out = tmp_path / "irr.json"
    call_command("irr_report", "--from-db", "--round", str(round.pk), "--json", str(out), stdout=io.StringIO())
    report = json.loads(out.read_text())
    assert report["summary"]["items"] == 1
    assert [(item["item_id"], item["annotators"]) for item in report["items"]] == [(first.review_set_id, 3)]

    release = make_release(project=project, name="irr", version="1.0.0", out_dir=tmp_path / "release")
    assert release.counts["rankings"] == 3 * 5 and release.counts["workers"] == 3

    sync = services.sync_round(round=round)
    assert sorted(row["worker"] for row in sync.forged) == ["FAKEPID1", "FAKEPID2", "FAKEPID3"]
    assert Assignment.objects.filter(confirmation="forged").count() == 3  # marked, not deleted

    report = services.pay_round(round=round)
    assert report.approved == 3
    assert prolific_fake.total_paid("reward") == 3 * 150
    assert set(Assignment.objects.filter(pk__in=[a.pk for a in forged]).values_list("review_status", flat=True)) == {
        "submitted"}


def test_forged_mturk_assignments_count_for_nothing(mturk_fake, round_factory, capsys, tmp_path):
    round = round_factory(items=2, workers_per_item=2)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    first, second = HIT.objects.select_related("item").order_by("item__position")

    # Honest workers: accepted at MTurk, saved here, then handed in at MTurk (externalSubmit).
    for worker in ("AHONEST1", "AHONEST2"):
        assignment_id = mturk_fake.accept_assignment(first.hit_id, worker)
        assignment, token, action = page_and_token(
            f"/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={first.hit_id}&workerId={worker}"
            f"&turkSubmitTo={SANDBOX}")
        assert save(action, token, {"choice": "left"}).status_code == 201
        mturk_fake.submit_assignment(assignment_id, {ANSWERS_FIELD: encode_answers({"choice": "left"})})
    # Forged: the real id of the second HIT, made-up assignment and worker ids.
    forged = []
    for n in (1, 2):
        assignment, token, action = page_and_token(
            f"/work/mturk/{round.pk}/?assignmentId=3FORGEDASSIGNMENT{n}&hitId={second.hit_id}&workerId=AFORGED{n}"
            f"&turkSubmitTo={SANDBOX}")
        assert save(action, token, {"choice": "right"}).status_code == 201
        forged.append(assignment.pk)
    # MTurk shows an assignment only once handed in there: nothing is confirmed by our saves alone.
    assert set(Assignment.objects.values_list("confirmation", flat=True)) == {"unconfirmed"}
    assert not WorkItem.objects.filter(round=round, completed_at__isnull=False).exists()
    assert pairwise_battles(round).empty

    sync = services.sync_round(round=round)
    assert sync.confirmed == 2 and sync.awaiting_confirmation == 2 and sync.forged == []
    first.item.refresh_from_db()
    second.item.refresh_from_db()
    assert first.item.completed_at is not None and second.item.completed_at is None

    # Past the time limit the forged ones can no longer reach MTurk: forged, and their slots are free.
    Assignment.objects.filter(pk__in=forged).update(expires_at=timezone.now() - timedelta(seconds=1))
    capsys.readouterr()
    call_command("sync_round", str(round.pk))
    out = capsys.readouterr().out
    assert "2 forged" in out and "AFORGED1" in out and "AFORGED2" in out
    assert set(Assignment.objects.filter(pk__in=forged).values_list("confirmation", flat=True)) == {"forged"}
    assert Assignment.objects.holding_a_slot().filter(item=second.item).count() == 0
    second.item.refresh_from_db()
    assert second.item.completed_at is None

    battles = pairwise_battles(round)
    assert len(battles) == 2 and set(battles["item_id"]) == {first.item_id}
    out_path = tmp_path / "ratings.json"
    call_command("ratings", "--from-db", "--round", str(round.pk), "--method", "bt", "--json", str(out_path),
                 stdout=io.StringIO())
    ratings = json.loads(out_path.read_text())
    assert sum(model["battles"] for model in ratings["models"]) == 2 * 2  # two judgments, two sides each

    report = services.pay_round(round=round, providers={"mturk": MTurkProvider(retry_pause=0)})
    assert report.approved == 2 and report.sync.forged and len(report.sync.forged) == 2
    assert mturk_fake.total_paid("reward") == "1.00"
    assert {call.params["AssignmentId"] for call in mturk_fake.calls("ApproveAssignment")} == set(
        Assignment.objects.filter(worker__external_id__startswith="AHONEST").values_list(
            "provider_assignment_id", flat=True))
    assert set(Assignment.objects.filter(pk__in=forged).values_list("review_status", flat=True)) == {"submitted"}


def test_a_repeated_save_asks_the_provider_once(prolific_fake, ranking_project, settings):
    _project, round, study_id = ranking_project
    url = f"/work/prolific/{round.pk}/?PROLIFIC_PID=FAKEPID9&STUDY_ID={study_id}&SESSION_ID=FAKESESSION9"
    unreachable_at_arrival(prolific_fake, settings)
    assignment, token, action = page_and_token(url)
    lookups = len(prolific_fake.calls("GET /api/v1/submissions/{id}/"))
    answers = {"order": shown_order(assignment, sorted(assignment.presentation["review_order"]))}
    assert save(action, token, answers).status_code == 201
    for _ in range(3):  # double clicks, retries, a loop: the stored answer, no more provider calls
        assert save(action, token, answers).status_code == 200
    assert len(prolific_fake.calls("GET /api/v1/submissions/{id}/")) == lookups + 1
    assert Assignment.objects.get(pk=assignment.pk).confirmation == "forged"
