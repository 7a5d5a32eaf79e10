"""The MTurk fake, driven through boto3 exactly as the product drives the real service."""
from __future__ import annotations

import datetime as dt
import json
import threading
import xml.etree.ElementTree as ET
from decimal import Decimal

import httpx
import pytest
from botocore.exceptions import ClientError

from fakes.mturk import (
    ANSWER_KEY_NS,
    HTML_QUESTION_NS,
    QUESTION_FORM_ANSWERS_NS,
    FakeMTurkServer,
    RehearsalError,
    fee_for,
)
from tests.fakes.conftest import external_question, mturk_client_for

QUESTION_FORM_NS = ("http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/"
                    "2017-11-06/QuestionForm.xsd")
QUALIFICATION_TEST = f"""<QuestionForm xmlns="{QUESTION_FORM_NS}">
  <Question>
    <QuestionIdentifier>better_caption</QuestionIdentifier>
    <QuestionContent><Text>Which caption follows the instruction?</Text></QuestionContent>
    <AnswerSpecification><SelectionAnswer><Selections>
      <Selection><SelectionIdentifier>a</SelectionIdentifier><Text>A</Text></Selection>
      <Selection><SelectionIdentifier>b</SelectionIdentifier><Text>B</Text></Selection>
    </Selections></SelectionAnswer></AnswerSpecification>
  </Question>
</QuestionForm>"""
ANSWER_KEY = f"""<AnswerKey xmlns="{ANSWER_KEY_NS}">
  <Question>
    <QuestionIdentifier>better_caption</QuestionIdentifier>
    <AnswerOption>
      <SelectionIdentifier>b</SelectionIdentifier><AnswerScore>1</AnswerScore>
    </AnswerOption>
  </Question>
</AnswerKey>"""


def error_of(excinfo) -> dict:
    return excinfo.value.response


def submitted_hit(mturk, mturk_fake, hit_params, workers: int = 1, **overrides):
    hit = mturk.create_hit(**{**hit_params, **overrides})["HIT"]
    ids = [mturk_fake.complete_assignment(hit["HITId"], {"instruction": f"answer {n}"})
           for n in range(workers)]
    return hit, ids


# -- HITs -----------------------------------------------------------------------------------

def test_create_hit_returns_the_modelled_hit(mturk, hit_params):
    before = dt.datetime.now(dt.timezone.utc)
    hit = mturk.create_hit(**hit_params)["HIT"]

    assert hit["HITStatus"] == "Assignable"
    assert hit["Reward"] == "0.50"
    assert hit["MaxAssignments"] == 3
    assert hit["NumberOfAssignmentsAvailable"] == 3
    assert hit["Question"] == hit_params["Question"]
    assert hit["HITId"].isalnum() and hit["HITId"].isupper()
    # Timestamps travel as epoch seconds and come back as datetimes.
    lifetime = hit["Expiration"] - hit["CreationTime"]
    assert lifetime == dt.timedelta(seconds=86400)
    assert abs(hit["CreationTime"] - before) < dt.timedelta(seconds=5)
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["Title"] == hit_params["Title"]
    assert [h["HITId"] for h in mturk.list_hits()["HITs"]] == [hit["HITId"]]


def test_hit_type_is_reused_for_identical_properties(mturk, hit_params):
    type_params = {k: hit_params[k] for k in ("Title", "Description", "Reward",
                                              "AssignmentDurationInSeconds", "Keywords")}
    first = mturk.create_hit_type(**type_params)["HITTypeId"]
    assert mturk.create_hit_type(**type_params)["HITTypeId"] == first
    assert mturk.create_hit_type(**{**type_params, "Reward": "0.60"})["HITTypeId"] != first

    hit = mturk.create_hit_with_hit_type(HITTypeId=first, MaxAssignments=2,
                                         LifetimeInSeconds=3600,
                                         Question=hit_params["Question"])["HIT"]
    assert hit["HITTypeId"] == first and hit["Reward"] == "0.50"

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.create_hit_with_hit_type(HITTypeId="NOSUCHTYPE", LifetimeInSeconds=3600,
                                       Question=hit_params["Question"])


@pytest.mark.parametrize("reward", ["0.5.0", "1.234", "abc", "-1", "0.00", "$1"])
def test_invalid_reward_is_rejected(mturk, hit_params, reward):
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**{**hit_params, "Reward": reward})
    assert "Reward" in error_of(excinfo)["Error"]["Message"]
    assert mturk.list_hits()["NumResults"] == 0


@pytest.mark.parametrize("reward", ["1", "1.", "0.5", "12.34"])
def test_rewards_matching_the_currency_pattern_are_accepted(mturk, hit_params, reward):
    assert mturk.create_hit(**{**hit_params, "Reward": reward})["HIT"]["Reward"] == \
        str(Decimal(reward).quantize(Decimal("0.01")))


@pytest.mark.parametrize("question, fragment", [
    (external_question("http://crowdbench.example.org/task/1/"), "https"),
    ("<ExternalQuestion xmlns='x'><ExternalURL>https://a.org/</ExternalURL>", "well-formed"),
    ("<ExternalQuestion><ExternalURL>https://a.org/</ExternalURL><FrameHeight>1</FrameHeight>"
     "</ExternalQuestion>", "namespace"),
    (external_question().replace("<FrameHeight>800</FrameHeight>", ""), "FrameHeight"),
    ("<Survey/>", "ExternalQuestion, HTMLQuestion or QuestionForm"),
    ("not xml at all", "well-formed"),
])
def test_invalid_question_is_rejected(mturk, hit_params, question, fragment):
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**{**hit_params, "Question": question})
    assert fragment in error_of(excinfo)["Error"]["Message"]
    assert mturk.list_hits()["NumResults"] == 0


def test_html_question_and_question_form_are_accepted(mturk, hit_params):
    html = (f'<HTMLQuestion xmlns="{HTML_QUESTION_NS}"><HTMLContent><![CDATA[<form></form>]]>'
            f"</HTMLContent><FrameHeight>0</FrameHeight></HTMLQuestion>")
    assert mturk.create_hit(**{**hit_params, "Question": html})["HIT"]["HITStatus"] == "Assignable"
    form = mturk.create_hit(**{**hit_params, "Question": QUALIFICATION_TEST})["HIT"]
    assert form["Question"] == QUALIFICATION_TEST


@pytest.mark.parametrize("field, value", [
    ("MaxAssignments", 0),
    ("LifetimeInSeconds", 29),
    ("LifetimeInSeconds", 31_536_001),
    ("AssignmentDurationInSeconds", 10),
    ("AutoApprovalDelayInSeconds", 2_592_001),
    ("Title", "x" * 129),
])
def test_out_of_range_values_are_rejected(mturk, hit_params, field, value):
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**{**hit_params, field: value})
    assert field in error_of(excinfo)["Error"]["Message"]


def test_repeated_unique_request_token_returns_hit_already_exists(mturk, mturk_fake, hit_params):
    first = mturk.create_hit(**hit_params, UniqueRequestToken="round-3-item-17")["HIT"]
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**hit_params, UniqueRequestToken="round-3-item-17")

    error = error_of(excinfo)
    assert error["TurkErrorCode"] == "AWS.MechanicalTurk.HitAlreadyExists"
    assert first["HITId"] in error["Error"]["Message"]
    assert mturk.list_hits()["NumResults"] == 1
    # The token only protects for 24 hours.
    mturk_fake.advance_time(24 * 3600 + 1)
    mturk.create_hit(**hit_params, UniqueRequestToken="round-3-item-17")
    assert mturk.list_hits()["NumResults"] == 2


def test_lost_create_hit_response_is_retried_into_hit_already_exists(mturk, mturk_fake,
                                                                    hit_params):
    # The first CreateHIT succeeds but its answer is lost; botocore retries the 500.
    mturk_fake.fail_next(1, operation="CreateHIT", status=500, after_processing=True)
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**hit_params, UniqueRequestToken="round-3-item-18")

    assert error_of(excinfo)["TurkErrorCode"] == "AWS.MechanicalTurk.HitAlreadyExists"
    creates = mturk_fake.calls("CreateHIT")
    assert [c.status for c in creates] == [500, 400]
    assert all(c.params["UniqueRequestToken"] == "round-3-item-18" for c in creates)
    assert mturk.list_hits()["NumResults"] == 1


def test_list_hits_paginates(mturk, hit_params):
    created = [mturk.create_hit(**hit_params)["HIT"]["HITId"] for _ in range(12)]
    pages = list(mturk.get_paginator("list_hits").paginate(PaginationConfig={"PageSize": 5}))
    assert [p["NumResults"] for p in pages] == [5, 5, 2]
    assert [h["HITId"] for p in pages for h in p["HITs"]] == created


def test_update_expiration_and_delete_follow_the_hit_life_cycle(mturk, mturk_fake, hit_params):
    hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params)
    hit_id = hit["HITId"]

    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.delete_hit(HITId=hit_id)  # still Assignable
    assert "Reviewable" in error_of(excinfo)["Error"]["Message"]

    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=dt.datetime(2015, 1, 1))
    expired = mturk.get_hit(HITId=hit_id)["HIT"]
    assert expired["HITStatus"] == "Reviewable"
    assert expired["NumberOfAssignmentsAvailable"] == 0
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.delete_hit(HITId=hit_id)  # a submitted assignment is not reviewed yet

    mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Empty answer.")
    mturk.delete_hit(HITId=hit_id)
    assert mturk.get_hit(HITId=hit_id)["HIT"]["HITStatus"] == "Disposed"
    assert mturk.list_hits()["NumResults"] == 0
    with pytest.raises(mturk.exceptions.RequestError):  # too late to overturn the rejection
        mturk.approve_assignment(AssignmentId=assignment_id, OverrideRejection=True)


def test_extending_an_expired_hit_makes_it_assignable_again(mturk, hit_params):
    hit_id = mturk.create_hit(**hit_params)["HIT"]["HITId"]
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=dt.datetime(2015, 1, 1))
    assert mturk.get_hit(HITId=hit_id)["HIT"]["HITStatus"] == "Reviewable"
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=later)
    hit = mturk.get_hit(HITId=hit_id)["HIT"]
    assert hit["HITStatus"] == "Assignable"
    assert abs(hit["Expiration"] - later) < dt.timedelta(seconds=1)


def test_unknown_hit_is_a_request_error(mturk):
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.get_hit(HITId="3XYZNOSUCHHIT")
    assert "3XYZNOSUCHHIT does not exist" in error_of(excinfo)["Error"]["Message"]


# -- assignments ----------------------------------------------------------------------------

def test_submitted_answers_are_question_form_answers_xml(mturk, mturk_fake, hit_params):
    hit = mturk.create_hit(**hit_params)["HIT"]
    assignment_id = mturk_fake.complete_assignment(
        hit["HITId"], {"instruction": "Describe the café <sign>", "tags": ["food", "street"]},
        worker_id="A1B2C3D4E5F6G7")

    assignment = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert assignment["WorkerId"] == "A1B2C3D4E5F6G7"
    assert assignment["AssignmentStatus"] == "Submitted"
    answer = assignment["Answer"]
    assert answer.startswith('<?xml version="1.0" encoding="ASCII"?>')
    answer.encode("ascii")  # non-ASCII arrives as character references
    root = ET.fromstring(answer)
    ns = {"a": QUESTION_FORM_ANSWERS_NS}
    assert root.tag == f"{{{QUESTION_FORM_ANSWERS_NS}}}QuestionFormAnswers"
    fields = {a.findtext("a:QuestionIdentifier", namespaces=ns): a.findtext("a:FreeText",
                                                                           namespaces=ns)
              for a in root.findall("a:Answer", ns)}
    assert fields == {"instruction": "Describe the café <sign>", "tags": "food|street"}


def test_question_form_hits_record_selections(mturk, mturk_fake, hit_params):
    hit = mturk.create_hit(**{**hit_params, "Question": QUALIFICATION_TEST})["HIT"]
    assignment_id = mturk_fake.complete_assignment(hit["HITId"], {"better_caption": ["b"]})
    assignment = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    answer = ET.fromstring(assignment["Answer"])
    ns = {"a": QUESTION_FORM_ANSWERS_NS}
    assert [e.text for e in answer.iterfind("a:Answer/a:SelectionIdentifier", ns)] == ["b"]
    assert answer.find("a:Answer/a:FreeText", ns) is None


def test_returned_assignment_frees_its_slot_and_is_never_listed(mturk, mturk_fake, hit_params):
    hit = mturk.create_hit(**{**hit_params, "MaxAssignments": 1})["HIT"]
    assignment_id = mturk_fake.accept_assignment(hit["HITId"], worker_id="A1QUITTER")
    mturk_fake.return_assignment(assignment_id)
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["HITStatus"] == "Assignable"
    assert mturk.list_assignments_for_hit(HITId=hit["HITId"])["Assignments"] == []
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.get_assignment(AssignmentId=assignment_id)
    with pytest.raises(RehearsalError):
        mturk_fake.submit_assignment(assignment_id, {"instruction": "too late"})


def test_assignments_paginate_with_next_token(mturk, mturk_fake, hit_params):
    hit, ids = submitted_hit(mturk, mturk_fake, hit_params, workers=25, MaxAssignments=25)

    seen, token, sizes = [], None, []
    while True:
        kwargs = {"HITId": hit["HITId"], "MaxResults": 10}
        if token:
            kwargs["NextToken"] = token
        page = mturk.list_assignments_for_hit(**kwargs)
        sizes.append(page["NumResults"])
        seen += [a["AssignmentId"] for a in page["Assignments"]]
        token = page.get("NextToken")
        if not token:
            break
    assert sizes == [10, 10, 5]
    assert seen == ids

    with pytest.raises(mturk.exceptions.RequestError):
        mturk.list_assignments_for_hit(HITId=hit["HITId"], NextToken="bm90LWEtdG9rZW4")


def test_assignment_status_filter(mturk, mturk_fake, hit_params):
    hit, ids = submitted_hit(mturk, mturk_fake, hit_params, workers=6, MaxAssignments=6)
    for assignment_id in ids[:3]:
        mturk.approve_assignment(AssignmentId=assignment_id)
    mturk.reject_assignment(AssignmentId=ids[3], RequesterFeedback="The instruction is empty.")

    def listed(*statuses):
        page = mturk.list_assignments_for_hit(HITId=hit["HITId"],
                                              AssignmentStatuses=list(statuses))
        return {a["AssignmentId"] for a in page["Assignments"]}

    assert listed("Approved") == set(ids[:3])
    assert listed("Rejected") == {ids[3]}
    assert listed("Submitted") == set(ids[4:])
    assert listed("Submitted", "Rejected") == set(ids[3:])
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["NumberOfAssignmentsCompleted"] == 4


def test_approving_twice_is_an_error_as_on_mturk(mturk, mturk_fake, hit_params):
    _hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params)
    mturk.approve_assignment(AssignmentId=assignment_id, RequesterFeedback="Thanks!")
    approved = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert approved["AssignmentStatus"] == "Approved"
    assert approved["RequesterFeedback"] == "Thanks!"
    assert "ApprovalTime" in approved

    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.approve_assignment(AssignmentId=assignment_id)
    assert "This operation can be called with a status of: Submitted" in \
        error_of(excinfo)["Error"]["Message"]
    assert len(mturk_fake.ledger()) == 1  # paid once


def test_reject_then_override(mturk, mturk_fake, hit_params):
    _hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params)
    mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Off-topic answer.")
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Again.")
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.approve_assignment(AssignmentId=assignment_id)
    assert mturk_fake.total_paid() == "0.00"

    mturk.approve_assignment(AssignmentId=assignment_id, OverrideRejection=True)
    assert mturk.get_assignment(
        AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Approved"
    assert mturk_fake.total_paid() == "0.50"


def test_auto_approval_after_the_delay(mturk, mturk_fake, hit_params):
    _hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params,
                                           AutoApprovalDelayInSeconds=3600)
    assert mturk.get_assignment(
        AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Submitted"
    mturk_fake.advance_time(3601)
    assert mturk.get_assignment(
        AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Approved"
    assert mturk.get_account_balance()["AvailableBalance"] == "9999.40"


def test_accepted_assignments_hold_slots_until_their_deadline(mturk, mturk_fake, hit_params):
    hit = mturk.create_hit(**{**hit_params, "MaxAssignments": 1})["HIT"]
    mturk_fake.accept_assignment(hit["HITId"])
    held = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert (held["HITStatus"], held["NumberOfAssignmentsPending"]) == ("Unassignable", 1)
    with pytest.raises(RehearsalError):
        mturk_fake.accept_assignment(hit["HITId"])

    mturk_fake.advance_time(hit_params["AssignmentDurationInSeconds"] + 1)  # abandoned
    freed = mturk.get_hit(HITId=hit["HITId"])["HIT"]
    assert (freed["HITStatus"], freed["NumberOfAssignmentsAvailable"]) == ("Assignable", 1)


def test_a_worker_gets_one_assignment_per_hit(mturk, mturk_fake, hit_params):
    hit = mturk.create_hit(**hit_params)["HIT"]
    mturk_fake.complete_assignment(hit["HITId"], {"x": "1"}, worker_id="A1WORKER")
    with pytest.raises(RehearsalError):
        mturk_fake.accept_assignment(hit["HITId"], worker_id="A1WORKER")


# -- money ----------------------------------------------------------------------------------

def test_fee_rules():
    assert fee_for(Decimal("0.50"), Decimal("0.20")) == Decimal("0.10")
    assert fee_for(Decimal("1.00"), Decimal("0.40")) == Decimal("0.40")
    assert fee_for(Decimal("0.01"), Decimal("0.20")) == Decimal("0.01")  # one-cent minimum
    assert fee_for(Decimal("0.33"), Decimal("0.20")) == Decimal("0.07")  # 0.066 rounds up


def test_fee_accounting_on_the_balance(mturk, mturk_fake, hit_params):
    mturk_fake.set_balance("100.00")
    small, small_ids = submitted_hit(mturk, mturk_fake, hit_params, workers=2)
    large, large_ids = submitted_hit(mturk, mturk_fake, hit_params, workers=1,
                                     MaxAssignments=10, Reward="1.00")
    assert mturk.get_account_balance()["AvailableBalance"] == "100.00"  # nothing approved yet

    for assignment_id in small_ids:
        mturk.approve_assignment(AssignmentId=assignment_id)  # 2 x (0.50 + 20 %)
    assert mturk.get_account_balance()["AvailableBalance"] == "98.80"
    mturk.approve_assignment(AssignmentId=large_ids[0])  # 1.00 + 40 % (10+ assignments)
    assert mturk.get_account_balance()["AvailableBalance"] == "97.40"

    worker = mturk.get_assignment(AssignmentId=large_ids[0])["Assignment"]["WorkerId"]
    mturk.send_bonus(WorkerId=worker, AssignmentId=large_ids[0], BonusAmount="2.00",
                     Reason="Top-quality instructions", UniqueRequestToken="bonus-1")
    assert mturk.get_account_balance()["AvailableBalance"] == "95.00"  # bonuses: + 20 %
    assert [(e.kind, e.amount, e.fee) for e in mturk_fake.ledger()] == [
        ("reward", "0.50", "0.10"), ("reward", "0.50", "0.10"), ("reward", "1.00", "0.40"),
        ("bonus", "2.00", "0.40")]
    assert mturk_fake.total_paid("bonus") == "2.00"


def test_insufficient_funds(mturk, mturk_fake, hit_params):
    mturk_fake.set_balance("1.00")
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_hit(**hit_params)  # 3 x 0.60 = 1.80
    assert error_of(excinfo)["TurkErrorCode"] == "AWS.MechanicalTurk.InsufficientFunds"
    mturk.create_hit(**{**hit_params, "MaxAssignments": 1})


def test_send_bonus_and_its_unique_request_token(mturk, mturk_fake, hit_params):
    hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params)
    worker = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["WorkerId"]
    bonus = {"WorkerId": worker, "AssignmentId": assignment_id, "BonusAmount": "1.25",
             "Reason": "Wage top-up to $18/hour", "UniqueRequestToken": f"bonus-{assignment_id}"}
    mturk.send_bonus(**bonus)

    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.send_bonus(**bonus)
    assert "has already been processed" in error_of(excinfo)["Error"]["Message"]
    assert mturk_fake.total_paid("bonus") == "1.25"
    assert len(mturk_fake.calls("SendBonus")) == 2

    for listing in (mturk.list_bonus_payments(HITId=hit["HITId"]),
                    mturk.list_bonus_payments(AssignmentId=assignment_id)):
        assert [(b["WorkerId"], b["BonusAmount"], b["Reason"]) for b in
                listing["BonusPayments"]] == [(worker, "1.25", "Wage top-up to $18/hour")]
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.list_bonus_payments()


@pytest.mark.parametrize("change, fragment", [
    ({"BonusAmount": "1.234"}, "BonusAmount"),
    ({"BonusAmount": "0"}, "BonusAmount"),
    ({"WorkerId": "A9SOMEONEELSE"}, "not worked on"),
])
def test_send_bonus_validation(mturk, mturk_fake, hit_params, change, fragment):
    _hit, (assignment_id,) = submitted_hit(mturk, mturk_fake, hit_params)
    worker = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["WorkerId"]
    bonus = {"WorkerId": worker, "AssignmentId": assignment_id, "BonusAmount": "1.00",
             "Reason": "Thanks", **change}
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.send_bonus(**bonus)
    assert fragment in error_of(excinfo)["Error"]["Message"]
    assert mturk_fake.ledger() == []


# -- qualifications and blocks --------------------------------------------------------------

def test_qualification_type_with_test_and_answer_key(mturk):
    qtype = mturk.create_qualification_type(
        Name="VisIT-Bench caption judge", Description="Pick the caption that follows the "
        "instruction.", QualificationTypeStatus="Active", Test=QUALIFICATION_TEST,
        AnswerKey=ANSWER_KEY, TestDurationInSeconds=600, RetryDelayInSeconds=86400,
    )["QualificationType"]
    assert qtype["Test"] == QUALIFICATION_TEST
    assert qtype["AnswerKey"] == ANSWER_KEY
    assert qtype["TestDurationInSeconds"] == 600
    assert qtype["QualificationTypeStatus"] == "Active"

    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_qualification_type(Name="VisIT-Bench caption judge", Description="again",
                                        QualificationTypeStatus="Active")
    assert "unique" in error_of(excinfo)["Error"]["Message"]


@pytest.mark.parametrize("changes, fragment", [
    ({"Test": "<QuestionForm"}, "well-formed"),
    ({"Test": QUALIFICATION_TEST.replace(QUESTION_FORM_NS, "urn:other")}, "QuestionForm"),
    ({"AnswerKey": ANSWER_KEY.replace(ANSWER_KEY_NS, "urn:other")}, "namespace"),
    ({"AnswerKey": ANSWER_KEY.replace("<QuestionIdentifier>better_caption",
                                      "<QuestionIdentifier>other")}, "not in the Test"),
    ({"AnswerKey": ANSWER_KEY.replace("<SelectionIdentifier>b", "<SelectionIdentifier>z")},
     "does not offer"),
    ({"TestDurationInSeconds": None}, "TestDurationInSeconds"),
    ({"Test": None}, "AnswerKey needs a Test"),
])
def test_invalid_qualification_tests_are_rejected(mturk, changes, fragment):
    params = {"Name": "judge", "Description": "d", "QualificationTypeStatus": "Active",
              "Test": QUALIFICATION_TEST, "AnswerKey": ANSWER_KEY, "TestDurationInSeconds": 600}
    params.update(changes)
    params = {k: v for k, v in params.items() if v is not None}
    with pytest.raises(mturk.exceptions.RequestError) as excinfo:
        mturk.create_qualification_type(**params)
    assert fragment in error_of(excinfo)["Error"]["Message"]


def test_qualifications_gate_who_can_accept(mturk, mturk_fake, hit_params):
    qtype_id = mturk.create_qualification_type(
        Name="trained", Description="Passed our training", QualificationTypeStatus="Active",
    )["QualificationType"]["QualificationTypeId"]
    mturk.associate_qualification_with_worker(QualificationTypeId=qtype_id,
                                              WorkerId="A1TRAINED", IntegerValue=90,
                                              SendNotification=False)
    mturk.associate_qualification_with_worker(QualificationTypeId=qtype_id,
                                              WorkerId="A2NOVICE", IntegerValue=40)
    hit = mturk.create_hit(**hit_params, QualificationRequirements=[{
        "QualificationTypeId": qtype_id, "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [80], "ActionsGuarded": "Accept"}])["HIT"]

    mturk_fake.accept_assignment(hit["HITId"], worker_id="A1TRAINED")
    for worker in ("A2NOVICE", "A3STRANGER"):
        with pytest.raises(RehearsalError):
            mturk_fake.accept_assignment(hit["HITId"], worker_id=worker)

    granted = mturk.list_workers_with_qualification_type(QualificationTypeId=qtype_id,
                                                         Status="Granted")
    assert {(q["WorkerId"], q["IntegerValue"]) for q in granted["Qualifications"]} == {
        ("A1TRAINED", 90), ("A2NOVICE", 40)}
    mturk.disassociate_qualification_from_worker(QualificationTypeId=qtype_id,
                                                 WorkerId="A2NOVICE", Reason="Retired")
    revoked = mturk.list_workers_with_qualification_type(QualificationTypeId=qtype_id,
                                                         Status="Revoked")
    assert [q["WorkerId"] for q in revoked["Qualifications"]] == ["A2NOVICE"]
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.disassociate_qualification_from_worker(QualificationTypeId=qtype_id,
                                                     WorkerId="A2NOVICE")


def test_requirement_on_unknown_qualification_type_is_rejected(mturk, hit_params):
    with pytest.raises(mturk.exceptions.RequestError):
        mturk.create_hit(**hit_params, QualificationRequirements=[{
            "QualificationTypeId": "NOSUCHQUAL", "Comparator": "Exists"}])


def test_worker_blocks(mturk, mturk_fake, hit_params):
    mturk.create_worker_block(WorkerId="A1SPAMMER", Reason="Copied answers")
    mturk.create_worker_block(WorkerId="A2BOT", Reason="Automated answers")
    assert {(b["WorkerId"], b["Reason"]) for b in mturk.list_worker_blocks()["WorkerBlocks"]} == {
        ("A1SPAMMER", "Copied answers"), ("A2BOT", "Automated answers")}
    hit = mturk.create_hit(**hit_params)["HIT"]
    with pytest.raises(RehearsalError):
        mturk_fake.accept_assignment(hit["HITId"], worker_id="A1SPAMMER")

    mturk.delete_worker_block(WorkerId="A1SPAMMER", Reason="Appeal accepted")
    assert [b["WorkerId"] for b in mturk.list_worker_blocks()["WorkerBlocks"]] == ["A2BOT"]
    mturk_fake.accept_assignment(hit["HITId"], worker_id="A1SPAMMER")


# -- faults, retries, the call log ----------------------------------------------------------

def test_throttling_is_retried_by_botocore(mturk, mturk_fake):
    mturk_fake.throttle_next(2, operation="GetAccountBalance")
    response = mturk.get_account_balance()
    assert response["AvailableBalance"] == "10000.00"
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert [c.error for c in mturk_fake.calls("GetAccountBalance")] == [
        "ThrottlingException", "ThrottlingException", None]


def test_persistent_throttling_raises_after_the_retry_budget(mturk_fake):
    client = mturk_client_for(mturk_fake, total_attempts=2)
    mturk_fake.throttle_next(5)
    with pytest.raises(ClientError) as excinfo:
        client.get_account_balance()
    assert excinfo.value.response["Error"]["Code"] == "ThrottlingException"
    assert excinfo.value.response["Error"]["Message"] == "Rate exceeded"
    assert len(mturk_fake.calls()) == 2


def test_server_errors_are_retried_and_scoped_to_one_operation(mturk, mturk_fake, hit_params):
    hit_id = mturk.create_hit(**hit_params)["HIT"]["HITId"]
    mturk_fake.fail_next(1, operation="GetHIT", status=503)
    mturk.list_hits()  # another operation is not affected
    assert mturk.get_hit(HITId=hit_id)["ResponseMetadata"]["RetryAttempts"] == 1
    assert [c.status for c in mturk_fake.calls("GetHIT")] == [503, 200]

    mturk_fake.fail_next(3, operation="GetHIT", status=500)
    with pytest.raises(mturk.exceptions.ServiceFault):
        mturk.get_hit(HITId=hit_id)


def test_call_log_records_operations_and_parameters(mturk, mturk_fake, hit_params):
    mturk.create_hit(**hit_params, UniqueRequestToken="t-1")
    (call,) = mturk_fake.calls("CreateHIT")
    assert call.params["Reward"] == "0.50"
    assert call.params["UniqueRequestToken"] == "t-1"
    assert (call.status, call.error) == (200, None)
    request_id = mturk.get_account_balance()["ResponseMetadata"]["RequestId"]
    assert len(request_id) == 36


def test_concurrent_clients_get_distinct_hits(mturk_fake, hit_params):
    clients = [mturk_client_for(mturk_fake) for _ in range(8)]
    results, errors = [], []

    def create(client, n):
        try:
            results.append(client.create_hit(**hit_params, UniqueRequestToken=f"c-{n}")
                           ["HIT"]["HITId"])
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(clients[n % 8], n)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 24


# -- the wire -------------------------------------------------------------------------------

def _raw_post(url: str, headers: dict, body: bytes = b"{}") -> httpx.Response:
    return httpx.post(url + "/", content=body, headers=headers)


@pytest.mark.parametrize("authorization, error_type", [
    (None, "MissingAuthenticationTokenException"),
    ("Bearer abc", "IncompleteSignatureException"),
    ("AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, "
     "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64, "IncompleteSignatureException"),
])
def test_requests_need_a_well_formed_sigv4_header(mturk_fake, authorization, error_type):
    headers = {"X-Amz-Target": "MTurkRequesterServiceV20170117.GetAccountBalance",
               "Content-Type": "application/x-amz-json-1.1", "X-Amz-Date": "20260101T000000Z"}
    if authorization:
        headers["Authorization"] = authorization
    response = _raw_post(mturk_fake.url, headers)
    assert response.status_code == 400
    assert response.json()["__type"] == error_type


def test_any_signature_in_the_right_form_is_accepted(mturk_fake):
    headers = {
        "X-Amz-Target": "MTurkRequesterServiceV20170117.GetAccountBalance",
        "Content-Type": "application/x-amz-json-1.1", "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/"
                         "mturk-requester/aws4_request, SignedHeaders=host;x-amz-date;"
                         "x-amz-target, Signature=" + "ab" * 32,
    }
    response = _raw_post(mturk_fake.url, headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-amz-json-1.1"
    assert response.json() == {"AvailableBalance": "10000.00", "OnHoldBalance": "0.00"}

    unknown = _raw_post(mturk_fake.url, {
        **headers, "X-Amz-Target": "MTurkRequesterServiceV20170117.LaunchRocket"})
    assert unknown.json()["__type"] == "UnknownOperationException"
    not_json = _raw_post(mturk_fake.url, headers, body=b"{not json")
    assert not_json.json()["__type"] == "SerializationException"


def test_control_endpoint_drives_a_simulated_worker(mturk, mturk_fake, hit_params):
    hit_id = mturk.create_hit(**hit_params)["HIT"]["HITId"]
    response = httpx.post(f"{mturk_fake.url}/_fake/complete_assignment",
                          json={"hit_id": hit_id, "answers": {"instruction": "Count the cats"}})
    assert response.status_code == 200
    assignment_id = response.json()["result"]
    assert mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["HITId"] == hit_id
    calls = httpx.post(f"{mturk_fake.url}/_fake/calls", json={"operation": "CreateHIT"}).json()
    assert [c["operation"] for c in calls["result"]] == ["CreateHIT"]
    assert json.loads(json.dumps(calls))["result"][0]["params"]["Reward"] == "0.50"
    bad = httpx.post(f"{mturk_fake.url}/_fake/complete_assignment", json={"hit_id": "NOPE",
                                                                         "answers": {"a": "b"}})
    assert bad.status_code == 400


def test_stop_releases_the_port(hit_params):
    fake = FakeMTurkServer().start()
    url = fake.url
    fake.stop()
    with pytest.raises(httpx.TransportError):
        httpx.post(url + "/", timeout=2)


def test_stop_also_ends_kept_alive_connections(mturk_fake):
    client = mturk_client_for(mturk_fake, total_attempts=1)
    client.get_account_balance()  # opens a pooled keep-alive connection
    mturk_fake.stop()
    with pytest.raises(Exception) as excinfo:
        client.get_account_balance()
    assert not isinstance(excinfo.value, ClientError)  # a transport failure, not an answer
