"""Outside submitters with a project's submission token, and owners, submit predictions over the
API: the new models are judged against the board and the reference and enter the judge
leaderboard; every refusal changes nothing."""
import csv
import io
from datetime import timedelta
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from datasets_app.models import ModelOutput
from evaluation.judge.services import REFERENCE
from evaluation.models import JudgedBattle
from leaderboard import services
from leaderboard.models import Submission, SubmissionToken
from projects.services import create_project
from stepruns.models import StepRun
from tests.cockpit.board.conftest import MODEL, judged_instance
from tests.cockpit.board.test_uploads import predictions_csv
from tests.cockpit.conftest import PASSWORD

# Database behaviour (the leaderboard's aggregation; refusals write nothing): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

LONG = lambda n: f"A long and careful answer number {n} " * 5  # noqa: E731 - the fake judge prefers longer texts


@pytest.fixture
def board(project):
    return [judged_instance(project) for _ in range(3)]


@pytest.fixture
def open_project(project, researcher, llm_settings):
    services.set_policy(project=project, user=researcher, accepts_outside_submissions=True, judge_model=MODEL,
                        budget_usd="1.00")
    return project


@pytest.fixture
def token(open_project, researcher):
    _record, raw = services.create_token(project=open_project, user=researcher, label="Vision Lab")
    return raw


def outsider(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def submit(client, slug, content, name="preds.csv"):
    return client.post(f"/api/leaderboard/{slug}/submissions/",
                       {"file": SimpleUploadedFile(name, content.encode())}, format="multipart")


def test_an_outside_submitter_puts_a_new_model_on_the_board(open_project, board, token, fake_server,
                                                             django_capture_on_commit_callbacks):
    client = outsider(token)
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm", text=LONG))
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["models"] == ["lab-vlm"] and (body["rows"], body["matched"]) == (3, 3)
    assert body["submitter"] == "Vision Lab" and body["status"] == "queued"  # answered before the run
    submission = Submission.objects.get()
    detail = client.get(f"/api/leaderboard/{open_project.slug}/submissions/{submission.pk}/").json()
    assert detail["status"] == "succeeded", detail["summary"]
    # Only the newcomer's pairs: against model-x, model-y and the reference, 3 instances, both orders.
    assert detail["judged"] == {"done": 18, "total": 18} and len(fake_server.completion_requests) == 18
    assert float(detail["cost_usd"]) > 0
    pairs = {frozenset(pair) for pair in JudgedBattle.objects.values_list("model_a", "model_b")}
    assert pairs == {frozenset(("model-x", "lab-vlm")), frozenset(("model-y", "lab-vlm")),
                     frozenset(("lab-vlm", REFERENCE))}

    board_json = client.get(f"/api/leaderboard/{open_project.slug}/").json()
    names = [row["model"] for row in board_json["models"]]
    assert names[0] == "lab-vlm" and set(names) == {"lab-vlm", "model-x", "model-y", REFERENCE}


def test_a_second_submission_judges_only_its_own_pairs(open_project, board, token, fake_server,
                                                       django_capture_on_commit_callbacks):
    client = outsider(token)
    with django_capture_on_commit_callbacks(execute=True):
        submit(client, open_project.slug, predictions_csv(board, model="lab-vlm"))
    first = len(fake_server.completion_requests)
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, open_project.slug,
                          predictions_csv(board, model="lab-vlm-2", text=lambda n: f"Second lab, answer {n}."))
    assert response.status_code == 202
    # lab-vlm-2 against model-x, model-y, lab-vlm and the reference: 4 pairs x 3 instances x 2 orders.
    assert len(fake_server.completion_requests) - first == 24
    listed = client.get(f"/api/leaderboard/{open_project.slug}/submissions/").json()
    assert [row["models"] for row in listed["results"]] == [["lab-vlm-2"], ["lab-vlm"]]


def test_refusals_change_nothing(open_project, board, token, researcher):
    client = outsider(token)
    outputs, runs = ModelOutput.objects.count(), StepRun.objects.count()
    cases = [
        (predictions_csv(board, model="model-x"), 400, "already on the board"),
        (predictions_csv(board, model=REFERENCE), 400, "already on the board"),
        ("instruction,image,lab prediction\n,,x\n", 400, "row 1, column 'instruction'"),
        ("instruction,image\nq,u\n", 400, "prediction"),
    ]
    for content, code, words in cases:
        response = submit(client, open_project.slug, content)
        assert response.status_code == code and words in response.json()["detail"], response.content
    many = "instruction,image," + ",".join(f"m{n} prediction" for n in range(4)) + "\n"
    many += "".join(f'"{i.instruction}",{i.image_links.get().image.url},a,b,c,d\n' for i in board)
    response = submit(client, open_project.slug, many)
    assert response.status_code == 400 and "at most 3" in response.json()["detail"]
    assert (ModelOutput.objects.count(), StepRun.objects.count(), Submission.objects.count()) == (outputs, runs, 0)

    services.set_policy(project=open_project, user=researcher, accepts_outside_submissions=False, judge_model="",
                        budget_usd="1")
    response = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert response.status_code == 403 and "does not take submissions" in response.json()["detail"]
    assert not ModelOutput.objects.filter(model_name="lab-vlm").exists() and not Submission.objects.exists()


def test_one_submission_of_a_token_at_a_time(open_project, board, token):
    client = outsider(token)
    # Without running the on-commit callbacks, the first submission's judge run stays queued.
    assert submit(client, open_project.slug, predictions_csv(board, model="lab-vlm")).status_code == 202
    response = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm-2"))
    assert response.status_code == 409 and "still being judged" in response.json()["detail"]
    assert not ModelOutput.objects.filter(model_name="lab-vlm-2").exists()


def test_a_token_reaches_its_own_project_only(open_project, board, token, researcher, make_researcher, llm_settings):
    other = create_project(name="B", slug="b", owner=make_researcher("bob"))
    client = outsider(token)
    for url in ("/api/leaderboard/b/", "/api/leaderboard/b/submissions/"):
        assert client.get(url).status_code == 404
    assert submit(client, "b", predictions_csv(board, model="x")).status_code == 404
    # The researcher API does not take it, and a forged or revoked token is refused.
    assert client.get("/api/projects/").status_code == 401
    assert outsider(services.TOKEN_PREFIX + "forged").get(f"/api/leaderboard/{open_project.slug}/").status_code == 401
    record = SubmissionToken.objects.get()
    services.revoke_token(project=open_project, user=researcher, token_id=record.pk)
    assert client.get(f"/api/leaderboard/{open_project.slug}/submissions/").status_code == 401
    assert not Submission.objects.exists() and other.pk


def test_submitters_see_only_their_own_submissions(open_project, board, token, researcher,
                                                   django_capture_on_commit_callbacks):
    _record, second = services.create_token(project=open_project, user=researcher, label="Other Lab")
    with django_capture_on_commit_callbacks(execute=True):
        submit(outsider(token), open_project.slug, predictions_csv(board, model="lab-vlm"))
    theirs = Submission.objects.get()
    other = outsider(second)
    assert other.get(f"/api/leaderboard/{open_project.slug}/submissions/").json()["results"] == []
    assert other.get(f"/api/leaderboard/{open_project.slug}/submissions/{theirs.pk}/").status_code == 404
    # Members see every submission of the project.
    member = APIClient()
    member.login(username=researcher.username, password=PASSWORD)
    rows = member.get(f"/api/leaderboard/{open_project.slug}/submissions/").json()["results"]
    assert [row["submitter"] for row in rows] == ["Vision Lab"]


def test_an_owner_submits_with_their_session_a_collaborator_may_not(project, board, researcher, collaborator,
                                                                    llm_settings, django_capture_on_commit_callbacks):
    owner = APIClient()
    owner.login(username=researcher.username, password=PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(owner, project.slug, predictions_csv(board, model="own-vlm"))
    assert response.status_code == 202 and response.json()["submitter"] == researcher.username
    assert Submission.objects.get().step_run.status == StepRun.Status.SUCCEEDED
    helper = APIClient()
    helper.login(username=collaborator.username, password=PASSWORD)
    assert submit(helper, project.slug, predictions_csv(board, model="their-vlm")).status_code == 403
    assert helper.get(f"/api/leaderboard/{project.slug}/").status_code == 200
    assert APIClient().get(f"/api/leaderboard/{project.slug}/").status_code == 401


def test_no_configured_judge_refuses_before_anything_is_stored(open_project, board, token, settings, researcher):
    settings.LLM_MODEL, settings.LLM_PRICES = "", {}
    response = submit(outsider(token), open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert response.status_code == 503 and "cannot take submissions now" in response.json()["detail"]
    owner = APIClient()
    owner.login(username=researcher.username, password=PASSWORD)
    response = submit(owner, open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert response.status_code == 503 and "No LLM judge is configured" in response.json()["detail"]
    assert not ModelOutput.objects.filter(model_name="lab-vlm").exists()


def test_tokens_are_stored_as_digests(open_project, researcher):
    record, raw = services.create_token(project=open_project, user=researcher, label="Lab")
    assert raw.startswith(services.TOKEN_PREFIX) and len(raw) > 40
    stored = SubmissionToken.objects.filter(pk=record.pk).values().get()
    assert raw not in str(stored) and stored["digest"] == services.token_digest(raw)
    assert services.token_from_secret(raw) == record


def test_the_test_set_and_its_template_let_an_outsider_answer_by_instance_id(
        open_project, board, token, fake_server, django_capture_on_commit_callbacks):
    client = outsider(token)
    listed = client.get(f"/api/leaderboard/{open_project.slug}/instances/").json()
    assert [row["instance_id"] for row in listed["results"]] == [i.pk for i in board]
    assert listed["results"][0]["instruction"] == board[0].instruction
    assert all(url.startswith("http") for row in listed["results"] for url in row["images"])

    template = client.get(f"/api/leaderboard/{open_project.slug}/template.csv")
    assert template.status_code == 200 and template["Content-Type"].startswith("text/csv")
    lines = template.content.decode().splitlines()
    assert lines[0] == "instance_id,instruction,instruction_category,images,my-model prediction"
    # The lab renames the column, answers every row, and drops the images (the id matches).
    rows = list(csv.reader(lines[1:]))
    filled = ["instance_id,instruction,lab-vlm prediction"]
    filled += [f'{row[0]},"{row[1]}",Answer {n} to it.' for n, row in enumerate(rows)]
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, open_project.slug, "\n".join(filled) + "\n")
    assert response.status_code == 202 and response.json()["matched"] == 3, response.content
    # A wrong id or an instruction that is not the instance's leaves the row out, saying why.
    other = ["instance_id,instruction,lab-2 prediction", f'{board[0].pk},"Something else",x',
             f'999999,"{board[1].instruction}",y', f'{board[2].pk},"{board[2].instruction}",z']
    with django_capture_on_commit_callbacks(execute=True):
        body = submit(client, open_project.slug, "\n".join(other) + "\n").json()
    assert body["matched"] == 1 and body["unmatched"] == [
        [1, f"instance {board[0].pk} has another instruction"], [2, "no instance 999999 here"]]


def test_leaderboard_template_csv_neutralises_formula_cells(
        open_project, board, token, fake_server, django_capture_on_commit_callbacks):
    """Instructions and categories that a spreadsheet would run as formulas get a leading "'" in
    template.csv (OWASP's CSV injection rule); the filled-in template still matches its instances."""
    formulas = ['=HYPERLINK("https://evil.example.org","click")', "+1+2", "-2+3 cats?", "@SUM(A1:A2)"]
    for instance, instruction in zip(board, formulas):
        instance.instruction = instruction
        instance.save(update_fields=["instruction"])
    family = board[0].family
    family.name = "\t=1+1"
    family.save(update_fields=["name"])
    board.append(judged_instance(open_project))
    board[3].instruction = "\r@cmd"
    board[3].save(update_fields=["instruction"])
    client = outsider(token)
    template = client.get(f"/api/leaderboard/{open_project.slug}/template.csv")
    rows = list(csv.DictReader(io.StringIO(template.content.decode(), newline="")))
    by_id = {int(row["instance_id"]): row for row in rows}
    assert [by_id[instance.pk]["instruction"] for instance in board] == [
        "'=HYPERLINK(\"https://evil.example.org\",\"click\")", "'+1+2", "'-2+3 cats?", "'\r@cmd"]
    assert by_id[board[0].pk]["instruction_category"] == "'\t=1+1"
    # Uploaded back as it was downloaded, the neutralised instructions match their instances.
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["instance_id", "instruction", "instruction_category", "lab-vlm prediction"])
    for n, row in enumerate(rows):
        writer.writerow([row["instance_id"], row["instruction"], row["instruction_category"], f"Answer {n}."])
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, open_project.slug, buffer.getvalue())
    assert response.status_code == 202 and response.json()["matched"] == len(rows), response.content


def test_a_name_differing_only_in_case_is_taken(open_project, board, token):
    response = submit(outsider(token), open_project.slug, predictions_csv(board, model="Model-X"))
    assert response.status_code == 400 and "Model-X are already on the board" in response.json()["detail"]
    response = submit(outsider(token), open_project.slug, predictions_csv(board, model="Reference"))
    assert response.status_code == 400
    assert not ModelOutput.objects.filter(model_name__in=["Model-X", "Reference"]).exists()


def test_an_unpriced_judge_is_refused_before_anything_is_stored_without_naming_settings(
        open_project, board, token, llm_settings):
    llm_settings.LLM_PRICES = {}
    response = submit(outsider(token), open_project.slug, predictions_csv(board, model="lab-vlm"))
    body = response.json()
    assert response.status_code == 503 and "cannot take submissions now" in body["detail"]
    assert "LLM_PRICES" not in body["detail"]
    assert not ModelOutput.objects.filter(model_name="lab-vlm").exists() and not StepRun.objects.exists()


def test_a_submission_stopped_by_its_budget_may_be_sent_again_and_is_replaced(
        open_project, board, token, researcher, fake_server, django_capture_on_commit_callbacks):
    client = outsider(token)
    services.set_policy(project=open_project, user=researcher, accepts_outside_submissions=True, judge_model=MODEL,
                        budget_usd="0.000001")
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm")).json()
    assert client.get(f"/api/leaderboard/{open_project.slug}/submissions/{first['id']}/").json()["status"] == "stopped"
    # Another submitter may not take the name over.
    _record, other = services.create_token(project=open_project, user=researcher, label="Other")
    taken = submit(outsider(other), open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert taken.status_code == 400 and "already on the board" in taken.json()["detail"]

    services.set_policy(project=open_project, user=researcher, accepts_outside_submissions=True, judge_model=MODEL,
                        budget_usd="1")
    with django_capture_on_commit_callbacks(execute=True):
        again = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm", text=LONG))
    assert again.status_code == 202, again.content
    detail = client.get(f"/api/leaderboard/{open_project.slug}/submissions/{again.json()['id']}/").json()
    assert detail["status"] == "succeeded" and detail["judged"] == {"done": 18, "total": 18}
    texts = set(ModelOutput.objects.filter(model_name="lab-vlm").values_list("text", flat=True))
    assert texts == {LONG(n) for n in range(3)}
    assert JudgedBattle.objects.filter(model_a="lab-vlm").count() + JudgedBattle.objects.filter(
        model_b="lab-vlm").count() == 9

    # Once judged in full, the name is the model's for good.
    with django_capture_on_commit_callbacks(execute=True):
        third = submit(client, open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert third.status_code == 400 and "already on the board" in third.json()["detail"]


def test_a_token_stops_working_when_outside_submissions_are_turned_off(open_project, board, token, researcher):
    client = outsider(token)
    assert client.get(f"/api/leaderboard/{open_project.slug}/instances/").status_code == 200
    services.set_policy(project=open_project, user=researcher, accepts_outside_submissions=False, judge_model="",
                        budget_usd="1")
    for path in ("", "instances/", "template.csv", "submissions/"):
        response = client.get(f"/api/leaderboard/{open_project.slug}/{path}")
        assert response.status_code == 403 and "does not take submissions" in response.json()["detail"], path


def test_a_submitted_file_is_parsed_once(open_project, board, token):
    from datasets_app import model_outputs

    with mock.patch.object(model_outputs, "_read_predictions", wraps=model_outputs._read_predictions) as parse:
        response = submit(outsider(token), open_project.slug, predictions_csv(board, model="lab-vlm"))
    assert response.status_code == 202, response.content
    assert parse.call_count == 1
    assert ModelOutput.objects.filter(model_name="lab-vlm").count() == 3


def test_a_malformed_file_is_named_with_its_row_and_field_and_changes_nothing(open_project, board, token):
    rows = predictions_csv(board, model="lab-vlm").splitlines()
    rows[2] = rows[2].replace("http", "ftp", 1)  # the second data row's image
    response = submit(outsider(token), open_project.slug, "\n".join(rows) + "\n", name="lab results.csv")
    detail = response.json()["detail"]
    assert response.status_code == 400 and detail.startswith("lab results.csv, row 2, column 'image': "), detail
    assert "crowdbench-upload-" not in detail  # not the temporary copy's path
    assert not ModelOutput.objects.filter(model_name="lab-vlm").exists()
    assert not Submission.objects.exists() and not StepRun.objects.exists()


def token_writes(queries) -> list[str]:
    return [query["sql"] for query in queries if query["sql"].startswith("UPDATE")
            and SubmissionToken._meta.db_table in query["sql"]]


def test_a_tokens_use_is_written_at_most_once_in_a_while(open_project, token):
    client = outsider(token)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            assert client.get(f"/api/leaderboard/{open_project.slug}/instances/").status_code == 200
    assert len(token_writes(queries.captured_queries)) == 1
    record = SubmissionToken.objects.get()
    first_use = record.last_used_at
    assert first_use is not None

    # Once the last stamp is older than the resolution, the next request writes it again.
    earlier = timezone.now() - services.LAST_USED_RESOLUTION - timedelta(seconds=1)
    SubmissionToken.objects.filter(pk=record.pk).update(last_used_at=earlier)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/api/leaderboard/{open_project.slug}/instances/").status_code == 200
    assert len(token_writes(queries.captured_queries)) == 1
    record.refresh_from_db()
    assert record.last_used_at > first_use


def test_a_stamp_read_before_another_request_wrote_it_is_not_written_again(open_project, token):
    """Two requests reading the same old stamp: the second's UPDATE finds it fresh and leaves it."""
    stale = services.token_from_secret(token)
    SubmissionToken.objects.filter(pk=stale.pk).update(last_used_at=None)
    stale.last_used_at = None
    services._record_use(stale)
    written = SubmissionToken.objects.get().last_used_at
    stale.last_used_at = None  # as a request that read the row before the first write saw it
    with CaptureQueriesContext(connection) as queries:
        services._record_use(stale)
    assert len(token_writes(queries.captured_queries)) == 1  # the conditional UPDATE ran ...
    assert SubmissionToken.objects.get().last_used_at == written  # ... and changed nothing
