"""The Prolific fake, driven over HTTP with httpx as the product's Prolific client drives it."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from fakes.prolific import FakeProlificServer, RehearsalError

REJECTION = ("Your ranking was submitted in 14 seconds and ranks the five reviews in the order "
             "they were shown, which the instructions asked you not to do.")


def published(prolific, study_body, **changes) -> dict:
    study = prolific.post("/api/v1/studies/", json={**study_body, **changes})
    assert study.status_code == 201, study.text
    response = prolific.post(f"/api/v1/studies/{study.json()['id']}/transition/",
                             json={"action": "PUBLISH"})
    assert response.status_code == 200, response.text
    return response.json()


def assert_error(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["status"] == status
    assert isinstance(error["error_code"], int) and error["title"]
    return error


# -- authentication and routing -------------------------------------------------------------

@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer researcher-token"},
                                     {"Authorization": "Token wrong-token"}])
def test_requests_need_the_token(prolific_fake, headers):
    response = httpx.get(f"{prolific_fake.url}/api/v1/users/me/", headers=headers)
    assert_error(response, 401)


def test_unknown_paths_and_methods(prolific):
    assert_error(prolific.get("/api/v1/studies/0123456789abcdef01234567/"), 404)
    assert_error(prolific.post("/api/v1/studies/", content=b"{not json",
                               headers={"Content-Type": "application/json"}), 400)
    assert_error(prolific.delete("/api/v1/studies/"), 405)
    assert_error(prolific.get("/api/v2/studies/"), 404)


def test_me_and_workspace_balance(prolific, prolific_fake):
    me = prolific.get("/api/v1/users/me/").json()
    # Only documented fields: the workspace is not part of the user.
    assert set(me) == {"id", "name", "email"}
    workspaces = prolific.get("/api/v1/workspaces/").json()
    assert workspaces["meta"]["count"] == 1 and workspaces["_links"]["next"]["href"] is None
    (workspace,) = workspaces["results"]
    assert workspace["id"] == prolific_fake.workspace_id
    balance = prolific.get(f"/api/v1/workspaces/{workspace['id']}/balance/").json()
    assert balance["total_balance"] == balance["available_balance"] == prolific_fake.get_balance() == 1_000_000
    assert balance["currency_code"] == "GBP"
    assert set(balance["balance_breakdown"]) == {"rewards", "bonuses", "fees", "vat"}


def test_study_creation_refuses_undocumented_fields_and_unknown_projects(prolific, prolific_fake, study_body):
    refused = prolific.post("/api/v1/studies/", json={**study_body, "workspace": prolific_fake.workspace_id,
                                                      "project": "0" * 24})
    detail = assert_error(refused, 400)["detail"]
    assert set(detail) == {"workspace", "project"}
    created = prolific.post("/api/v1/studies/", json={**study_body, "project": prolific_fake.project_id})
    assert created.status_code == 201 and created.json()["project"] == prolific_fake.project_id


def test_study_list_is_paged_with_next_links(prolific, prolific_fake, study_body):
    for number in range(5):
        prolific.post("/api/v1/studies/", json={**study_body, "internal_name": f"study-{number}"})
    first = prolific.get("/api/v1/studies/", params={"page_size": 2}).json()
    assert first["meta"]["count"] == 5 and len(first["results"]) == 2
    names, url = [], "/api/v1/studies/?page_size=2"
    while url:
        page = prolific.get(url).json()
        names += [study["internal_name"] for study in page["results"]]
        url = page["_links"]["next"]["href"]
    assert names == [f"study-{number}" for number in range(5)]


# -- studies --------------------------------------------------------------------------------

def test_create_publish_pause_start_stop(prolific, study_body):
    created = prolific.post("/api/v1/studies/", json=study_body)
    assert created.status_code == 201
    study = created.json()
    assert study["status"] == "UNPUBLISHED"
    assert study["reward"] == 300 and study["total_available_places"] == 5
    assert study["completion_codes"][0]["code"] == "C7A1B2"
    assert len(study["id"]) == 24
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json() == study

    def transition(action):
        return prolific.post(f"/api/v1/studies/{study['id']}/transition/",
                             json={"action": action})

    assert transition("PUBLISH").json()["status"] == "ACTIVE"
    assert_error(transition("PUBLISH"), 400)
    assert transition("PAUSE").json()["status"] == "PAUSED"
    assert transition("START").json()["status"] == "ACTIVE"
    assert transition("STOP").json()["status"] == "COMPLETED"  # nobody waits for review
    assert_error(transition("START"), 400)
    assert_error(transition("LAUNCH"), 400)


@pytest.mark.parametrize("url, fragment", [
    ("https://crowdbench.example.org/p/?STUDY_ID={{%STUDY_ID%}}", "PROLIFIC_PID"),
    ("https://crowdbench.example.org/p/?pid={{%PROLIFIC_PID%}}&x={{%WORKER_ID%}}",
     "Unknown placeholder"),
    ("https://crowdbench.example.org/p/?pid={{PROLIFIC_PID}}", "Malformed placeholder"),
    ("crowdbench.example.org/p/?pid={{%PROLIFIC_PID%}}", "valid URL"),
])
def test_study_url_placeholders_are_validated(prolific, study_body, url, fragment):
    response = prolific.post("/api/v1/studies/", json={**study_body, "external_study_url": url})
    error = assert_error(response, 400)
    assert fragment in " ".join(error["detail"]["external_study_url"])


def test_url_without_placeholders_is_fine_when_ids_are_not_recorded(prolific, study_body):
    response = prolific.post("/api/v1/studies/", json={
        **study_body, "prolific_id_option": "not_required",
        "external_study_url": "https://crowdbench.example.org/p/"})
    assert response.status_code == 201


@pytest.mark.parametrize("changes, field", [
    ({"reward": 1.5}, "reward"),
    ({"reward": "300"}, "reward"),
    ({"reward": 50}, "reward"),  # 50 pence for 10 minutes is below the hourly minimum
    ({"total_available_places": 0}, "total_available_places"),
    ({"estimated_completion_time": None}, "estimated_completion_time"),
    ({"completion_codes": []}, "completion_codes"),
    ({"completion_codes": [{"code": "X", "code_type": "DONE", "actions": []}]},
     "completion_codes"),
    ({"completion_codes": None, "completion_code": "C7A1B2",
      "completion_option": "url"}, "completion_codes"),
    ({"device_compatibility": ["phone"]}, "device_compatibility"),
    ({"name": ""}, "name"),
])
def test_study_validation(prolific, study_body, changes, field):
    body = {k: v for k, v in {**study_body, **changes}.items() if v is not None}
    error = assert_error(prolific.post("/api/v1/studies/", json=body), 400)
    assert field in error["detail"]
    assert prolific.get("/api/v1/studies/").json()["results"] == []


def test_publishing_needs_funds(prolific, prolific_fake, study_body):
    prolific_fake.set_balance(1000)  # 5 places x (300 + fee) is more
    study = prolific.post("/api/v1/studies/", json=study_body).json()
    response = prolific.post(f"/api/v1/studies/{study['id']}/transition/",
                             json={"action": "PUBLISH"})
    assert "Insufficient funds" in assert_error(response, 400)["detail"]


# -- participants and submissions -----------------------------------------------------------

def test_simulated_participant_lands_on_the_study_url(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    submission = prolific_fake.simulate_participant(study["id"], time_taken=540)

    query = parse_qs(urlsplit(submission["study_url"]).query)
    # SESSION_ID carries the submission id, as on Prolific.
    assert query == {"PROLIFIC_PID": [submission["participant_id"]], "STUDY_ID": [study["id"]],
                     "SESSION_ID": [submission["id"]]}
    fetched = prolific.get(f"/api/v1/submissions/{submission['id']}/").json()
    assert fetched["status"] == "AWAITING REVIEW"
    assert fetched["study_code"] == "C7A1B2"
    assert fetched["time_taken"] == 540
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json()["places_taken"] == 1


def test_participants_need_an_active_study_with_places(prolific, prolific_fake, study_body):
    draft = prolific.post("/api/v1/studies/", json=study_body).json()
    with pytest.raises(RehearsalError):
        prolific_fake.start_submission(draft["id"])
    study = published(prolific, study_body, total_available_places=1)
    prolific_fake.simulate_participant(study["id"], participant_id="a" * 24)
    with pytest.raises(RehearsalError):
        prolific_fake.start_submission(study["id"])


def test_auto_approve_code_approves_and_pays(prolific, prolific_fake, study_body):
    codes = [{"code": "AUTO1", "code_type": "COMPLETED",
              "actions": [{"action": "AUTOMATICALLY_APPROVE"}]}]
    study = published(prolific, study_body, completion_codes=codes)
    submission = prolific_fake.simulate_participant(study["id"])
    assert submission["status"] == "APPROVED"
    assert prolific_fake.total_paid("reward") == 300
    assert prolific_fake.get_balance() == 1_000_000 - 300 - 100  # 33.33 % fee, rounded


def test_submissions_are_paged_with_links(prolific, prolific_fake, study_body):
    study = published(prolific, study_body, total_available_places=25)
    expected = [prolific_fake.simulate_participant(study["id"])["id"] for _ in range(25)]

    seen, url, pages = [], f"/api/v1/studies/{study['id']}/submissions/?page_size=10", 0
    while url:
        page = prolific.get(url).json()
        assert page["meta"]["count"] == 25
        seen += [s["id"] for s in page["results"]]
        url = page["_links"]["next"]["href"]
        pages += 1
    assert pages == 3
    assert seen == expected
    # The same listing through /submissions/?study=<id>, which keeps the filter in its links.
    seen, url = [], f"/api/v1/submissions/?study={study['id']}&page_size=10"
    while url:
        page = prolific.get(url).json()
        seen += [s["id"] for s in page["results"]]
        url = page["_links"]["next"]["href"]
    assert seen == expected
    assert_error(prolific.get("/api/v1/submissions/"), 400)
    assert_error(prolific.get(f"/api/v1/studies/{study['id']}/submissions/?page=9"), 404)


def test_full_study_waits_for_review_then_completes(prolific, prolific_fake, study_body):
    study = published(prolific, study_body, total_available_places=2)
    first = prolific_fake.simulate_participant(study["id"])
    second = prolific_fake.start_submission(study["id"])
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json()["status"] == "ACTIVE"
    prolific_fake.complete_submission(second["id"], code="FAILCHK")
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json()["status"] == \
        "AWAITING REVIEW"

    for submission in (first, second):
        prolific.post(f"/api/v1/submissions/{submission['id']}/transition/",
                      json={"action": "APPROVE"})
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json()["status"] == "COMPLETED"


def test_timed_out_submission_frees_its_place(prolific, prolific_fake, study_body):
    study = published(prolific, study_body, total_available_places=1)
    started = prolific_fake.start_submission(study["id"])
    prolific_fake.advance_time(study["maximum_allowed_time"] * 60 + 1)
    assert prolific.get(f"/api/v1/submissions/{started['id']}/").json()["status"] == "TIMED-OUT"
    assert prolific.get(f"/api/v1/studies/{study['id']}/").json()["places_taken"] == 0
    prolific_fake.simulate_participant(study["id"])


# -- approve and reject ---------------------------------------------------------------------

def test_approve_is_idempotent_and_final(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    submission = prolific_fake.simulate_participant(study["id"])
    url = f"/api/v1/submissions/{submission['id']}/transition/"

    approved = prolific.post(url, json={"action": "APPROVE"})
    assert approved.status_code == 200 and approved.json()["status"] == "APPROVED"
    again = prolific.post(url, json={"action": "APPROVE"})  # ignored, as documented
    assert again.status_code == 200 and again.json()["status"] == "APPROVED"
    assert prolific_fake.total_paid("reward") == 300
    error = assert_error(prolific.post(url, json={
        "action": "REJECT", "message": REJECTION, "rejection_category": "LOW_EFFORT"}), 400)
    assert "AWAITING REVIEW" in error["detail"]


def test_only_completed_submissions_can_be_reviewed(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    started = prolific_fake.start_submission(study["id"])
    response = prolific.post(f"/api/v1/submissions/{started['id']}/transition/",
                             json={"action": "APPROVE"})
    assert "ACTIVE" in assert_error(response, 400)["detail"]
    assert prolific_fake.total_paid() == 0


@pytest.mark.parametrize("body, field", [
    ({"action": "REJECT", "message": REJECTION[:99], "rejection_category": "LOW_EFFORT"},
     "message"),
    ({"action": "REJECT", "message": REJECTION}, "rejection_category"),
    ({"action": "REJECT", "message": REJECTION, "rejection_category": "BORING"},
     "rejection_category"),
    ({"action": "REJECT", "message": " " * 120, "rejection_category": "LOW_EFFORT"}, "message"),
])
def test_reject_needs_a_real_message_and_a_category(prolific, prolific_fake, study_body, body,
                                                    field):
    study = published(prolific, study_body)
    submission = prolific_fake.simulate_participant(study["id"])
    url = f"/api/v1/submissions/{submission['id']}/transition/"
    assert field in assert_error(prolific.post(url, json=body), 400)["detail"]
    assert prolific.get(f"/api/v1/submissions/{submission['id']}/").json()["status"] == \
        "AWAITING REVIEW"


def test_reject(prolific, prolific_fake, study_body):
    assert len(REJECTION) >= 100
    study = published(prolific, study_body)
    submission = prolific_fake.simulate_participant(study["id"])
    url = f"/api/v1/submissions/{submission['id']}/transition/"
    body = {"action": "REJECT", "message": REJECTION, "rejection_category": "TOO_QUICKLY"}
    assert prolific.post(url, json=body).json()["status"] == "REJECTED"
    assert prolific.post(url, json=body).json()["status"] == "REJECTED"
    assert_error(prolific.post(url, json={"action": "APPROVE"}), 400)
    assert prolific_fake.total_paid() == 0


# -- bonuses --------------------------------------------------------------------------------

def test_two_step_bonus_and_double_payment_detection(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    alice = prolific_fake.simulate_participant(study["id"])
    bob = prolific_fake.simulate_participant(study["id"])
    # A line names a participant or a submission.
    csv_bonuses = f"{alice['participant_id']},4.25\n{bob['id']},0.75"

    created = prolific.post("/api/v1/submissions/bonus-payments/",
                            json={"study_id": study["id"], "csv_bonuses": csv_bonuses})
    assert created.status_code == 201
    record = created.json()
    assert record["amount"] == 500  # minor units, from major units in the CSV
    assert record["total_amount"] == record["amount"] + record["fees"]
    assert prolific_fake.total_bonus_paid() == 0  # creating a record pays nothing

    pay = f"/api/v1/bulk-bonus-payments/{record['id']}/pay/"
    assert prolific.post(pay).status_code == 202  # no body needed
    # Accepted, paid "in the following minutes": nothing shows until it settles.
    assert prolific_fake.total_bonus_paid() == 0 and prolific_fake.bonus_payments_settling() == 1
    assert prolific.get(f"/api/v1/submissions/{alice['id']}/").json()["bonus_payments"] == []
    prolific_fake.advance_time(prolific_fake.bonus_settle_seconds + 1)
    assert prolific.get(f"/api/v1/submissions/{alice['id']}/").json()["bonus_payments"] == [425]
    assert prolific_fake.total_bonus_paid() == 500

    # Paying again pays again, as on Prolific: only a client-side ledger prevents it.
    balance = prolific_fake.get_balance()
    assert prolific.post(pay, json={}).status_code == 202
    assert prolific_fake.settle_bonus_payments() == 1
    assert prolific_fake.total_bonus_paid() == 1000
    assert prolific_fake.total_bonus_paid(alice["participant_id"]) == 850
    assert prolific_fake.get_balance() == balance - record["total_amount"]
    assert len(prolific_fake.calls("POST /api/v1/bulk-bonus-payments/{id}/pay/")) == 2


@pytest.mark.parametrize("line, fragment", [
    ("{pid},1.234", "two decimals"),
    ("{pid},-1", "positive"),
    ("{pid},abc", "positive"),
    ("{pid}", "participant_id,amount"),
    ("0123456789abcdef01234567,1.00", "neither a participant nor a submission"),
])
def test_bonus_csv_validation(prolific, prolific_fake, study_body, line, fragment):
    study = published(prolific, study_body)
    pid = prolific_fake.simulate_participant(study["id"])["participant_id"]
    response = prolific.post("/api/v1/submissions/bonus-payments/", json={
        "study_id": study["id"], "csv_bonuses": line.format(pid=pid)})
    error = assert_error(response, 400)
    assert fragment in " ".join(error["detail"]["csv_bonuses"])


def test_bonus_for_unknown_study_or_record(prolific):
    response = prolific.post("/api/v1/submissions/bonus-payments/",
                             json={"study_id": "0" * 24, "csv_bonuses": "x,1.00"})
    assert "study_id" in assert_error(response, 400)["detail"]
    assert_error(prolific.post(f"/api/v1/bulk-bonus-payments/{'0' * 24}/pay/", json={}), 404)


# -- faults and the call log ----------------------------------------------------------------

def test_injected_429_and_5xx(prolific, prolific_fake, study_body):
    prolific_fake.fail_next(2, status=429, retry_after=3)
    for _ in range(2):
        response = prolific.get("/api/v1/users/me/")
        assert_error(response, 429)
        assert response.headers["Retry-After"] == "3"
    assert prolific.get("/api/v1/users/me/").status_code == 200

    prolific_fake.fail_next(1, operation="POST /api/v1/studies/", status=502)
    assert prolific.get("/api/v1/users/me/").status_code == 200  # other routes unaffected
    assert_error(prolific.post("/api/v1/studies/", json=study_body), 502)
    assert prolific.get("/api/v1/studies/").json()["results"] == []
    assert [c.status for c in prolific_fake.calls("POST /api/v1/studies/")] == [502]


def test_lost_pay_response_still_paid(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    pid = prolific_fake.simulate_participant(study["id"])["participant_id"]
    record = prolific.post("/api/v1/submissions/bonus-payments/", json={
        "study_id": study["id"], "csv_bonuses": f"{pid},2.00"}).json()
    prolific_fake.fail_next(1, operation="POST /api/v1/bulk-bonus-payments/{id}/pay/",
                            status=504, after_processing=True)
    assert_error(prolific.post(f"/api/v1/bulk-bonus-payments/{record['id']}/pay/", json={}), 504)
    # The client saw a failure, yet the payment was accepted: a blind retry would pay twice.
    assert prolific_fake.bonus_payments_settling() == 1
    prolific_fake.settle_bonus_payments()
    assert prolific_fake.total_bonus_paid() == 200


def test_call_log_records_route_and_body(prolific, prolific_fake, study_body):
    prolific.post("/api/v1/studies/", json=study_body)
    (call,) = prolific_fake.calls("POST /api/v1/studies/")
    assert call.params["body"]["reward"] == 300
    assert call.status == 201


def test_control_endpoint_drives_a_simulated_participant(prolific, prolific_fake, study_body):
    study = published(prolific, study_body)
    response = httpx.post(f"{prolific_fake.url}/_fake/simulate_participant",
                          json={"study_id": study["id"], "code": "FAILCHK"})
    assert response.status_code == 200
    submission = response.json()["result"]
    assert prolific.get(f"/api/v1/submissions/{submission['id']}/").json()["study_code"] == \
        "FAILCHK"
    paid = httpx.post(f"{prolific_fake.url}/_fake/total_bonus_paid", json={})
    assert paid.json() == {"result": 0}


def test_token_free_fake_accepts_any_token(study_body):
    with FakeProlificServer() as fake:
        response = httpx.post(f"{fake.url}/api/v1/studies/", json=study_body,
                              headers={"Authorization": "Token anything"})
        assert response.status_code == 201
