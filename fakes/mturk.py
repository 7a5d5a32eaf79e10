"""A local Amazon Mechanical Turk requester API that speaks the real wire protocol.

AWS JSON 1.1: ``POST /`` with ``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``,
``Content-Type: application/x-amz-json-1.1`` and a SigV4 ``Authorization`` header (its form is
checked, its signature is not). Request and response shapes follow the 2017-01-17 service model
bundled with botocore; errors are HTTP 400 ``{"__type": "RequestError", "Message": ...,
"TurkErrorCode": ...}`` so boto3 raises ``client.exceptions.RequestError`` / ``ServiceFault``.

Point boto3 at it::

    with FakeMTurkServer() as fake:
        client = boto3.client("mturk", endpoint_url=fake.url, region_name="us-east-1",
                              aws_access_key_id="test", aws_secret_access_key="test")
        hit = client.create_hit(...)["HIT"]
        fake.complete_assignment(hit["HITId"], {"rating": "4"})   # a simulated worker

From the command line: ``python -m fakes.mturk --port 8766``; the rehearsal controls are
then ``POST /_fake/<method>`` with keyword arguments as JSON. See docs/fakes.md.
"""
from __future__ import annotations

import argparse
import base64
import datetime as dt
import itertools
import json
import random
import re
import string
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from fakes._http import FakeService, HTTPRequest, HTTPResponse

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
CONTENT_TYPE = "application/x-amz-json-1.1"
SIGNING_SERVICE = "mturk-requester"

_SCHEMAS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/"
EXTERNAL_QUESTION_NS = _SCHEMAS + "2006-07-14/ExternalQuestion.xsd"
HTML_QUESTION_NS = _SCHEMAS + "2011-11-11/HTMLQuestion.xsd"
QUESTION_FORM_NAMESPACES = (_SCHEMAS + "2017-11-06/QuestionForm.xsd",
                            _SCHEMAS + "2005-10-01/QuestionForm.xsd")
ANSWER_KEY_NS = _SCHEMAS + "2005-10-01/AnswerKey.xsd"
QUESTION_FORM_ANSWERS_NS = _SCHEMAS + "2005-10-01/QuestionFormAnswers.xsd"

# Limits from the MTurk API reference (CreateHIT, CreateHITType, RejectAssignment, ...).
CURRENCY_PATTERN = re.compile(r"^[0-9]+(\.)?[0-9]{0,2}$")  # the service model's CurrencyAmount
MIN_REWARD = Decimal("0.01")
SECONDS_RANGE = (30, 31_536_000)  # LifetimeInSeconds, AssignmentDurationInSeconds: 30 s .. 1 year
AUTO_APPROVAL_RANGE = (0, 2_592_000)  # 0 .. 30 days
DEFAULT_AUTO_APPROVAL_DELAY = 2_592_000
MAX_ASSIGNMENTS_RANGE = (1, 1_000_000)
MAX_QUESTION_BYTES = 65_535
MAX_TITLE, MAX_DESCRIPTION, MAX_KEYWORDS = 128, 2_000, 1_000
MAX_ANNOTATION, MAX_FEEDBACK = 255, 1_024
MAX_QUALIFICATION_REQUIREMENTS = 10
TOKEN_LIFETIME = 24 * 3600  # UniqueRequestToken
REJECTION_OVERRIDE_WINDOW = 30 * 24 * 3600
RESULT_SIZE_RANGE = (1, 100)
DEFAULT_PAGE_SIZE = 10
# Fees: 20 % of rewards and bonuses, 40 % for HITs with 10 or more assignments, at least $0.01.
BASE_FEE_RATE = Decimal("0.20")
LARGE_HIT_FEE_RATE = Decimal("0.40")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = Decimal("0.01")
CENT = Decimal("0.01")

# System qualification types (production and sandbox ids); the fake assumes every worker has them.
SYSTEM_QUALIFICATION_TYPES = frozenset({
    "00000000000000000040",  # Worker_NumberHITsApproved
    "000000000000000000L0",  # Worker_PercentAssignmentsApproved
    "00000000000000000071",  # Worker_Locale
    "00000000000000000060",  # Worker_Adult
    "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH",  # Masters, production
    "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6",  # Masters, sandbox
})
COMPARATORS = frozenset({"LessThan", "LessThanOrEqualTo", "GreaterThan", "GreaterThanOrEqualTo",
                         "EqualTo", "NotEqualTo", "Exists", "DoesNotExist", "In", "NotIn"})
ASSIGNMENT_STATUSES = ("Submitted", "Approved", "Rejected")
# Internal assignment states that the API never shows.
_ACCEPTED, _ABANDONED, _RETURNED = "Accepted", "Abandoned", "Returned"

_SIGV4 = re.compile(
    r"^AWS4-HMAC-SHA256 "
    r"Credential=(?P<key>[^/\s,]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/(?P<service>[a-z0-9-]+)"
    r"/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<sig>[0-9a-f]{64})$"
)


class MTurkError(Exception):
    """An error the way MTurk reports it: a modelled exception type plus a TurkErrorCode."""

    def __init__(self, message: str, turk_error_code: str, kind: str = "RequestError",
                 status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.turk_error_code = turk_error_code
        self.kind = kind
        self.status = status


class RehearsalError(ValueError):
    """A rehearsal control was asked for something a real worker could not do."""


# -- state --------------------------------------------------------------------------------------

@dataclass
class HITType:
    id: str
    title: str
    description: str
    reward: Decimal
    assignment_duration: int
    auto_approval_delay: int
    keywords: str | None
    qualification_requirements: list[dict]


@dataclass
class HIT:
    id: str
    hit_type: HITType
    group_id: str
    question: str
    question_kind: str  # "ExternalQuestion" | "HTMLQuestion" | "QuestionForm"
    max_assignments: int
    created_at: float
    expires_at: float
    requester_annotation: str | None
    unique_request_token: str | None
    disposed: bool = False
    reviewing: bool = False

    @property
    def fee_rate(self) -> Decimal:
        large = self.max_assignments >= LARGE_HIT_ASSIGNMENTS
        return LARGE_HIT_FEE_RATE if large else BASE_FEE_RATE


@dataclass
class Assignment:
    id: str
    hit_id: str
    worker_id: str
    accepted_at: float
    deadline: float
    status: str = _ACCEPTED
    answer: str | None = None
    submitted_at: float | None = None
    auto_approve_at: float | None = None
    approved_at: float | None = None
    rejected_at: float | None = None
    requester_feedback: str | None = None


@dataclass
class BonusPayment:
    worker_id: str
    amount: Decimal
    assignment_id: str
    hit_id: str
    reason: str
    granted_at: float


@dataclass
class QualificationType:
    id: str
    name: str
    description: str
    keywords: str | None
    status: str
    created_at: float
    retry_delay: int | None
    test: str | None
    test_duration: int | None
    answer_key: str | None
    auto_granted: bool
    auto_granted_value: int | None


@dataclass
class Qualification:
    type_id: str
    worker_id: str
    value: int
    granted_at: float
    status: str = "Granted"


@dataclass(frozen=True)
class LedgerEntry:
    """Money that left the account: a reward on approval or a bonus, each with its fee."""

    kind: str  # "reward" | "bonus"
    hit_id: str
    assignment_id: str
    worker_id: str
    amount: str
    fee: str
    at: float


# -- helpers ------------------------------------------------------------------------------------

def fee_for(amount: Decimal, rate: Decimal) -> Decimal:
    """MTurk's commission on one payment: a rate of the amount, at least one cent."""
    if amount <= 0:
        return Decimal("0.00")
    return max(MIN_FEE, (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def _money(value: Decimal) -> str:
    return str(value.quantize(CENT))


def _timestamp_ms(now: float) -> int:
    return int(now * 1000)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _ns(tag: str) -> str:
    return tag[1:].split("}", 1)[0] if tag.startswith("{") else ""


def _child_text(element: ET.Element, namespace: str, name: str) -> str | None:
    child = element.find(f"{{{namespace}}}{name}")
    return None if child is None else (child.text or "").strip()


def _parse_xml(text: str, parameter: str) -> ET.Element:
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        # Entity declarations are never part of an MTurk document and enable entity expansion.
        raise _invalid(f"The value of {parameter} must not declare a DOCTYPE or entities.",
                       "AWS.MechanicalTurk.XMLParseError")
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise _invalid(f"The value of {parameter} is not well-formed XML: {exc}.",
                       "AWS.MechanicalTurk.XMLParseError") from None


def _invalid(message: str, code: str = "AWS.MechanicalTurk.InvalidParameterValue") -> MTurkError:
    return MTurkError(message, code)


def validate_question(question: str) -> str:
    """Check a HIT's Question XML and return its kind (ExternalQuestion, HTMLQuestion, ...)."""
    if len(question.encode("utf-8")) > MAX_QUESTION_BYTES:
        raise _invalid(f"The Question must not be larger than {MAX_QUESTION_BYTES} bytes.",
                       "AWS.ParameterOutOfRange")
    root = _parse_xml(question, "Question")
    kind, namespace = _local(root.tag), _ns(root.tag)
    if kind == "ExternalQuestion":
        if namespace != EXTERNAL_QUESTION_NS:
            raise _invalid(f"ExternalQuestion must be in the namespace {EXTERNAL_QUESTION_NS}.",
                           "AWS.MechanicalTurk.XMLParseError")
        url = _child_text(root, namespace, "ExternalURL")
        if not url:
            raise _invalid("ExternalQuestion requires an ExternalURL.",
                           "AWS.MechanicalTurk.XMLParseError")
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.netloc:
            raise _invalid(f"The ExternalURL {url!r} must be an https URL.",
                           "AWS.MechanicalTurk.InvalidParameterValue")
        _check_frame_height(root, namespace)
    elif kind == "HTMLQuestion":
        if namespace != HTML_QUESTION_NS:
            raise _invalid(f"HTMLQuestion must be in the namespace {HTML_QUESTION_NS}.",
                           "AWS.MechanicalTurk.XMLParseError")
        if not _child_text(root, namespace, "HTMLContent"):
            raise _invalid("HTMLQuestion requires a non-empty HTMLContent.",
                           "AWS.MechanicalTurk.XMLParseError")
        _check_frame_height(root, namespace)
    elif kind == "QuestionForm":
        question_form_selections(root, "Question")
    else:
        raise _invalid(f"The Question must be an ExternalQuestion, HTMLQuestion or QuestionForm, "
                       f"not {kind}.", "AWS.MechanicalTurk.XMLParseError")
    return kind


def _check_frame_height(root: ET.Element, namespace: str) -> None:
    height = _child_text(root, namespace, "FrameHeight")
    if height is None or not height.isdigit():
        raise _invalid(f"{_local(root.tag)} requires a FrameHeight (a whole number of pixels, "
                       f"0 for the full window).", "AWS.MechanicalTurk.XMLParseError")


def question_form_selections(root: ET.Element, parameter: str) -> dict[str, set[str]]:
    """Validate a QuestionForm; map each QuestionIdentifier to its SelectionIdentifiers."""
    namespace = _ns(root.tag)
    if _local(root.tag) != "QuestionForm" or namespace not in QUESTION_FORM_NAMESPACES:
        raise _invalid(f"{parameter} must be a QuestionForm in the namespace "
                       f"{QUESTION_FORM_NAMESPACES[0]}.", "AWS.MechanicalTurk.XMLParseError")
    questions: dict[str, set[str]] = {}
    for question in root.findall(f"{{{namespace}}}Question"):
        identifier = _child_text(question, namespace, "QuestionIdentifier")
        if not identifier:
            raise _invalid(f"Every Question in {parameter} needs a QuestionIdentifier.",
                           "AWS.MechanicalTurk.XMLParseError")
        if identifier in questions:
            raise _invalid(f"QuestionIdentifier {identifier!r} appears twice in {parameter}.",
                           "AWS.MechanicalTurk.XMLParseError")
        if question.find(f"{{{namespace}}}QuestionContent") is None:
            raise _invalid(f"Question {identifier!r} in {parameter} needs a QuestionContent.",
                           "AWS.MechanicalTurk.XMLParseError")
        spec = question.find(f"{{{namespace}}}AnswerSpecification")
        if spec is None or len(spec) != 1 or _local(spec[0].tag) not in (
                "FreeTextAnswer", "SelectionAnswer", "FileUploadAnswer"):
            raise _invalid(f"Question {identifier!r} in {parameter} needs an AnswerSpecification "
                           f"with one FreeTextAnswer, SelectionAnswer or FileUploadAnswer.",
                           "AWS.MechanicalTurk.XMLParseError")
        questions[identifier] = {
            (s.text or "").strip()
            for s in spec.iter(f"{{{namespace}}}SelectionIdentifier")
        }
    if not questions:
        raise _invalid(f"{parameter} must contain at least one Question.",
                       "AWS.MechanicalTurk.XMLParseError")
    return questions


def validate_answer_key(answer_key: str, test_questions: dict[str, set[str]]) -> None:
    root = _parse_xml(answer_key, "AnswerKey")
    if _local(root.tag) != "AnswerKey" or _ns(root.tag) != ANSWER_KEY_NS:
        raise _invalid(f"AnswerKey must be an AnswerKey in the namespace {ANSWER_KEY_NS}.",
                       "AWS.MechanicalTurk.XMLParseError")
    ns = ANSWER_KEY_NS
    keyed = root.findall(f"{{{ns}}}Question")
    if not keyed:
        raise _invalid("AnswerKey must contain at least one Question.",
                       "AWS.MechanicalTurk.XMLParseError")
    for question in keyed:
        identifier = _child_text(question, ns, "QuestionIdentifier")
        if identifier not in test_questions:
            raise _invalid(f"AnswerKey refers to QuestionIdentifier {identifier!r}, which is not "
                           f"in the Test.", "AWS.MechanicalTurk.InvalidParameterValue")
        options = question.findall(f"{{{ns}}}AnswerOption")
        if not options:
            raise _invalid(f"AnswerKey question {identifier!r} needs at least one AnswerOption.",
                           "AWS.MechanicalTurk.XMLParseError")
        for option in options:
            selections = [(s.text or "").strip()
                          for s in option.findall(f"{{{ns}}}SelectionIdentifier")]
            score = _child_text(option, ns, "AnswerScore")
            if not selections or score is None or not re.fullmatch(r"-?\d+", score):
                raise _invalid(f"Each AnswerOption of {identifier!r} needs SelectionIdentifier "
                               f"elements and an integer AnswerScore.",
                               "AWS.MechanicalTurk.XMLParseError")
            unknown = set(selections) - test_questions[identifier]
            if unknown:
                raise _invalid(f"AnswerKey question {identifier!r} names selections that the "
                               f"Test does not offer: {sorted(unknown)}.",
                               "AWS.MechanicalTurk.InvalidParameterValue")


def question_form_answers_xml(answers: Mapping[str, str | Sequence[str]],
                              selection_answers: bool = False) -> str:
    """Answers as MTurk stores them in ``Assignment.Answer``: a QuestionFormAnswers document.

    Free-text fields become ``<FreeText>``; with ``selection_answers`` (QuestionForm HITs) a list
    of values becomes one ``<SelectionIdentifier>`` each. For ExternalQuestion HITs a repeated form
    field arrives joined by ``|``, as MTurk does.
    """
    ns = QUESTION_FORM_ANSWERS_NS
    root = ET.Element(f"{{{ns}}}QuestionFormAnswers")
    for identifier, value in answers.items():
        answer = ET.SubElement(root, f"{{{ns}}}Answer")
        ET.SubElement(answer, f"{{{ns}}}QuestionIdentifier").text = identifier
        values = [value] if isinstance(value, str) else [str(v) for v in value]
        if selection_answers:
            for selection in values:
                ET.SubElement(answer, f"{{{ns}}}SelectionIdentifier").text = selection
        else:
            ET.SubElement(answer, f"{{{ns}}}FreeText").text = "|".join(values)
    body = ET.tostring(root, encoding="unicode", default_namespace=QUESTION_FORM_ANSWERS_NS)
    # MTurk declares ASCII and writes anything else as character references.
    return '<?xml version="1.0" encoding="ASCII"?>' + body.encode(
        "ascii", "xmlcharrefreplace").decode("ascii")


def _pagination_token(listing: str, offset: int) -> str:
    raw = json.dumps({"l": listing, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_pagination_token(token: str, listing: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if data["l"] == listing and isinstance(data["o"], int) and data["o"] >= 0:
            return data["o"]
    except (ValueError, KeyError, TypeError):
        pass
    raise _invalid("The pagination token is not valid for this request.")


# -- the fake -----------------------------------------------------------------------------------

class FakeMTurkServer(FakeService):
    """Stateful, thread-safe fake of the MTurk requester API (AWS JSON 1.1, 2017-01-17)."""

    DEFAULT_PORT = 8766
    CONTROL_METHODS = FakeService.CONTROL_METHODS | frozenset({
        "accept_assignment", "submit_assignment", "complete_assignment", "return_assignment",
        "set_balance", "get_balance", "throttle_next", "fail_next", "clear_faults", "ledger",
        "total_paid",
    })

    def __init__(self, host: str = "127.0.0.1", port: int = 0, balance: str = "10000.00",
                 seed: int | None = None) -> None:
        super().__init__(host, port)
        self._random = random.Random(seed)
        self._balance = self._parse_amount(balance, "balance")
        self._hit_types: dict[str, HITType] = {}
        self._hits: dict[str, HIT] = {}
        self._assignments: dict[str, Assignment] = {}
        self._bonuses: list[BonusPayment] = []
        self._qualification_types: dict[str, QualificationType] = {}
        self._qualifications: dict[tuple[str, str], Qualification] = {}
        self._blocks: dict[str, str] = {}
        self._hit_tokens: dict[str, tuple[str, float]] = {}
        self._bonus_tokens: dict[str, float] = {}
        self._ledger: list[LedgerEntry] = []
        self._worker_sequence = itertools.count(1)

    # -- rehearsal controls -------------------------------------------------------------------

    def set_balance(self, amount: str) -> str:
        """Set AvailableBalance (a dollar string such as "25.00")."""
        with self._lock:
            self._balance = self._parse_amount(amount, "amount")
            return _money(self._balance)

    def get_balance(self) -> str:
        with self._lock:
            self._refresh()
            return _money(self._balance)

    def ledger(self) -> list[LedgerEntry]:
        """Every payment made (rewards on approval, bonuses), each with its fee."""
        with self._lock:
            self._refresh()
            return list(self._ledger)

    def total_paid(self, kind: str | None = None) -> str:
        """Dollars paid to workers (fees excluded), optionally only "reward" or "bonus"."""
        with self._lock:
            self._refresh()
            total = sum((Decimal(e.amount) for e in self._ledger if kind in (None, e.kind)),
                        Decimal("0"))
            return _money(total)

    def throttle_next(self, count: int = 1, operation: str | None = None) -> None:
        """Answer the next ``count`` calls (of ``operation``, or any) as a throttling MTurk does.

        HTTP 400 with ``__type`` ``ThrottlingException`` and message "Rate exceeded": botocore's
        retry handlers (legacy and standard modes) treat that code as throttling and retry.
        """
        self._add_fault(count, operation, lambda: HTTPResponse.json(
            400, {"__type": "ThrottlingException", "message": "Rate exceeded"}, CONTENT_TYPE))

    def fail_next(self, count: int = 1, operation: str | None = None, status: int = 500,
                  after_processing: bool = False) -> None:
        """Answer the next ``count`` calls with a 5xx ``ServiceFault``.

        With ``after_processing`` the call takes effect first and only its answer is lost, as when
        a response times out: a retry then meets the UniqueRequestToken of the first attempt.
        """
        if not 500 <= status <= 599:
            raise ValueError("status must be a 5xx code")

        def respond() -> HTTPResponse:
            return HTTPResponse.json(status, {
                "__type": "ServiceFault",
                "Message": f"Amazon Mechanical Turk is temporarily unable to process your "
                           f"request. Try your call again. ({_timestamp_ms(self.clock.now())})",
                "TurkErrorCode": "AWS.ServiceUnavailable",
            }, CONTENT_TYPE)

        self._add_fault(count, operation, respond, after_processing)

    def accept_assignment(self, hit_id: str, worker_id: str | None = None) -> str:
        """A worker accepts the HIT; returns the new AssignmentId."""
        with self._lock:
            self._refresh()
            hit = self._hits.get(hit_id)
            if hit is None or hit.disposed:
                raise RehearsalError(f"HIT {hit_id} does not exist")
            worker_id = worker_id or self._new_worker_id()
            if not re.fullmatch(r"A[A-Z0-9]+", worker_id):
                raise RehearsalError(f"{worker_id!r} is not a WorkerId (A followed by A-Z0-9)")
            if worker_id in self._blocks:
                raise RehearsalError(f"worker {worker_id} is blocked")
            if self._hit_status(hit) != "Assignable":
                raise RehearsalError(f"HIT {hit_id} is {self._hit_status(hit)}, not Assignable")
            if any(a.worker_id == worker_id and a.status not in (_ABANDONED, _RETURNED)
                   for a in self._assignments_of(hit_id)):
                raise RehearsalError(f"worker {worker_id} already has an assignment for {hit_id}")
            self._check_requirements(hit, worker_id)
            now = self.clock.now()
            assignment = Assignment(self._new_id(), hit_id, worker_id, now,
                                    now + hit.hit_type.assignment_duration)
            self._assignments[assignment.id] = assignment
            return assignment.id

    def submit_assignment(self, assignment_id: str,
                          answers: Mapping[str, str | Sequence[str]]) -> str:
        """The worker submits answers (form field -> value); returns the Answer XML stored."""
        with self._lock:
            self._refresh()
            assignment = self._assignments.get(assignment_id)
            if assignment is None or assignment.status != _ACCEPTED:
                state = assignment.status if assignment else "unknown"
                raise RehearsalError(f"assignment {assignment_id} is {state}, not in progress")
            if not answers:
                raise RehearsalError("a submission carries at least one answer")
            hit = self._hits[assignment.hit_id]
            now = self.clock.now()
            assignment.answer = question_form_answers_xml(
                answers, selection_answers=hit.question_kind == "QuestionForm")
            assignment.status = "Submitted"
            assignment.submitted_at = now
            assignment.auto_approve_at = now + hit.hit_type.auto_approval_delay
            self._refresh()  # an auto-approval delay of 0 approves at once
            return assignment.answer

    def complete_assignment(self, hit_id: str, answers: Mapping[str, str | Sequence[str]],
                            worker_id: str | None = None) -> str:
        """Accept and submit in one step; returns the AssignmentId."""
        with self._lock:
            assignment_id = self.accept_assignment(hit_id, worker_id)
            self.submit_assignment(assignment_id, answers)
            return assignment_id

    def return_assignment(self, assignment_id: str) -> None:
        """The worker returns an accepted assignment; its slot becomes available again."""
        with self._lock:
            assignment = self._assignments.get(assignment_id)
            if assignment is None or assignment.status != _ACCEPTED:
                raise RehearsalError(f"assignment {assignment_id} is not in progress")
            assignment.status = _RETURNED

    # -- protocol -----------------------------------------------------------------------------

    def dispatch(self, request: HTTPRequest) -> HTTPResponse:
        response = super().dispatch(request)
        # botocore reports this as ResponseMetadata.RequestId.
        response.headers.setdefault("x-amzn-RequestId", str(uuid.uuid4()))
        return response

    def _operation_of(self, request: HTTPRequest) -> tuple[str, Any]:
        target = request.header("x-amz-target")
        operation = target[len(TARGET_PREFIX):] if target.startswith(TARGET_PREFIX) else target
        try:
            params = request.json() or {}
        except (ValueError, UnicodeDecodeError):
            params = {"_unparsable_body": request.body.decode("utf-8", "replace")}
        return operation or "<no X-Amz-Target>", params

    def _error_code_of(self, response: HTTPResponse) -> str | None:
        if response.status < 400:
            return None
        try:
            return json.loads(response.body).get("__type", str(response.status))
        except ValueError:
            return str(response.status)

    def _handle(self, request: HTTPRequest, operation: str, params: Any) -> HTTPResponse:
        problem = self._protocol_problem(request, params)
        if problem is not None:
            return problem
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            return HTTPResponse.json(400, {"__type": "UnknownOperationException",
                                           "message": f"Unknown operation {operation!r}"},
                                     CONTENT_TYPE)
        try:
            self._refresh()
            result = handler(params)
        except MTurkError as exc:
            return HTTPResponse.json(exc.status, {
                "__type": exc.kind,
                "Message": f"{exc.message} ({_timestamp_ms(self.clock.now())})",
                "TurkErrorCode": exc.turk_error_code,
            }, CONTENT_TYPE)
        return HTTPResponse.json(200, result, CONTENT_TYPE)

    def _protocol_problem(self, request: HTTPRequest, params: Any) -> HTTPResponse | None:
        def fail(kind: str, message: str) -> HTTPResponse:
            return HTTPResponse.json(400, {"__type": kind, "message": message}, CONTENT_TYPE)

        if request.method != "POST" or request.path != "/":
            return fail("UnknownOperationException", "Requests are POST / with an X-Amz-Target.")
        authorization = request.header("authorization")
        if not authorization:
            return fail("MissingAuthenticationTokenException", "Missing Authentication Token")
        match = _SIGV4.match(authorization)
        if match is None:
            return fail("IncompleteSignatureException",
                        "Authorization header requires Credential, SignedHeaders and Signature "
                        "in the AWS4-HMAC-SHA256 form.")
        signed = match["signed"].split(";")
        if match["service"] != SIGNING_SERVICE or "host" not in signed or not (
                request.header("x-amz-date") and "x-amz-date" in signed):
            return fail("IncompleteSignatureException",
                        f"Credential scope must name the {SIGNING_SERVICE} service and the "
                        f"signature must cover host and x-amz-date.")
        if request.header("content-type").split(";")[0].strip() != CONTENT_TYPE:
            return fail("SerializationException", f"Content-Type must be {CONTENT_TYPE}.")
        if not request.header("x-amz-target").startswith(TARGET_PREFIX):
            return fail("UnknownOperationException",
                        f"X-Amz-Target must start with {TARGET_PREFIX}")
        if not isinstance(params, dict) or "_unparsable_body" in params:
            return fail("SerializationException", "The request body is not a JSON object.")
        return None

    # -- time-driven state --------------------------------------------------------------------

    def _refresh(self) -> None:
        """Apply what the passage of time does: abandoned assignments and auto-approvals."""
        now = self.clock.now()
        for assignment in self._assignments.values():
            if assignment.status == _ACCEPTED and now >= assignment.deadline:
                assignment.status = _ABANDONED
            elif (assignment.status == "Submitted" and assignment.auto_approve_at is not None
                  and now >= assignment.auto_approve_at):
                self._approve(assignment, assignment.auto_approve_at, feedback=None)

    def _assignments_of(self, hit_id: str) -> list[Assignment]:
        return [a for a in self._assignments.values() if a.hit_id == hit_id]

    def _counts(self, hit: HIT) -> tuple[int, int, int, int]:
        """(pending, submitted-not-reviewed, reviewed, available) for a HIT."""
        pending = submitted = reviewed = 0
        for assignment in self._assignments_of(hit.id):
            if assignment.status == _ACCEPTED:
                pending += 1
            elif assignment.status == "Submitted":
                submitted += 1
            elif assignment.status in ("Approved", "Rejected"):
                reviewed += 1
        expired = self.clock.now() >= hit.expires_at
        available = 0 if expired else hit.max_assignments - pending - submitted - reviewed
        return pending, submitted, reviewed, available

    def _hit_status(self, hit: HIT) -> str:
        if hit.disposed:
            return "Disposed"
        if hit.reviewing:
            return "Reviewing"
        pending, _submitted, _reviewed, available = self._counts(hit)
        if available > 0:
            return "Assignable"
        return "Unassignable" if pending else "Reviewable"

    # -- money --------------------------------------------------------------------------------

    def _charge(self, kind: str, hit: HIT, assignment: Assignment, amount: Decimal,
                rate: Decimal, at: float) -> None:
        fee = fee_for(amount, rate)
        self._balance -= amount + fee
        self._ledger.append(LedgerEntry(kind, hit.id, assignment.id, assignment.worker_id,
                                        _money(amount), _money(fee), at))

    def _require_funds(self, cost: Decimal) -> None:
        if cost > self._balance:
            raise MTurkError(f"This Requester has insufficient funds in their account to "
                             f"complete this transaction: it needs ${_money(cost)}, the available "
                             f"balance is ${_money(self._balance)}.",
                             "AWS.MechanicalTurk.InsufficientFunds")

    def _approve(self, assignment: Assignment, at: float, feedback: str | None) -> None:
        hit = self._hits[assignment.hit_id]
        assignment.status = "Approved"
        assignment.approved_at = at
        assignment.requester_feedback = feedback
        self._charge("reward", hit, assignment, hit.hit_type.reward, hit.fee_rate, at)

    # -- ids ----------------------------------------------------------------------------------

    def _new_id(self, length: int = 30) -> str:
        alphabet = string.ascii_uppercase + string.digits
        return "".join(self._random.choice(alphabet) for _ in range(length))

    def _new_worker_id(self) -> str:
        return f"A{next(self._worker_sequence):04d}" + self._new_id(9)

    # -- parameter checks ---------------------------------------------------------------------

    @staticmethod
    def _required(params: dict, *names: str) -> None:
        missing = [n for n in names if params.get(n) in (None, "")]
        if missing:
            raise _invalid(f"Missing required parameter(s): {', '.join(missing)}.",
                           "AWS.MissingParameters")

    @staticmethod
    def _parse_amount(value: Any, name: str) -> Decimal:
        if not isinstance(value, str) or not CURRENCY_PATTERN.match(value):
            raise _invalid(f"The value {value!r} for {name} is not a valid currency amount: it "
                           f"must match {CURRENCY_PATTERN.pattern}.")
        try:
            return Decimal(value)
        except InvalidOperation:
            raise _invalid(f"The value {value!r} for {name} is not a number.") from None

    @staticmethod
    def _int(params: dict, name: str, low: int, high: int, default: int | None = None) -> int:
        value = params.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _invalid(f"{name} must be an integer.")
        if not low <= value <= high:
            raise _invalid(f"The value {value} for {name} is out of range: it must be between "
                           f"{low} and {high}.", "AWS.ParameterOutOfRange")
        return value

    @staticmethod
    def _text(params: dict, name: str, limit: int, required: bool = False) -> str | None:
        value = params.get(name)
        if value is None or value == "":
            if required:
                raise _invalid(f"Missing required parameter: {name}.", "AWS.MissingParameters")
            return None
        if not isinstance(value, str):
            raise _invalid(f"{name} must be a string.")
        if len(value) > limit:
            raise _invalid(f"{name} must not be longer than {limit} characters.",
                           "AWS.ParameterOutOfRange")
        return value

    @staticmethod
    def _worker_id(params: dict) -> str:
        worker_id = params.get("WorkerId")
        if not isinstance(worker_id, str) or not re.fullmatch(r"A[A-Z0-9]{1,63}", worker_id):
            raise _invalid(f"The value {worker_id!r} for WorkerId is invalid.")
        return worker_id

    def _page(self, items: list, params: dict, listing: str) -> tuple[list, dict]:
        size = self._int(params, "MaxResults", *RESULT_SIZE_RANGE, default=DEFAULT_PAGE_SIZE)
        token = params.get("NextToken")
        offset = _read_pagination_token(token, listing) if token else 0
        page = items[offset:offset + size]
        extra = {"NumResults": len(page)}
        if offset + size < len(items):
            extra["NextToken"] = _pagination_token(listing, offset + size)
        return page, extra

    def _get_hit(self, hit_id: Any) -> HIT:
        hit = self._hits.get(hit_id) if isinstance(hit_id, str) else None
        if hit is None:
            raise MTurkError(f"Hit {hit_id} does not exist.", "AWS.MechanicalTurk.HITDoesNotExist")
        return hit

    def _get_assignment(self, assignment_id: Any) -> Assignment:
        known = isinstance(assignment_id, str)
        assignment = self._assignments.get(assignment_id) if known else None
        if assignment is None or assignment.status not in ASSIGNMENT_STATUSES:
            raise MTurkError(f"Assignment {assignment_id} does not exist.",
                             "AWS.MechanicalTurk.AssignmentDoesNotExist")
        return assignment

    def _validate_requirements(self, requirements: Any) -> list[dict]:
        if requirements is None:
            return []
        if not isinstance(requirements, list) or \
                len(requirements) > MAX_QUALIFICATION_REQUIREMENTS:
            raise _invalid(f"QualificationRequirements must be a list of at most "
                           f"{MAX_QUALIFICATION_REQUIREMENTS} requirements.",
                           "AWS.ParameterOutOfRange")
        for requirement in requirements:
            type_id = requirement.get("QualificationTypeId")
            comparator = requirement.get("Comparator")
            if comparator not in COMPARATORS:
                raise _invalid(f"Comparator {comparator!r} is not one of {sorted(COMPARATORS)}.")
            if type_id not in SYSTEM_QUALIFICATION_TYPES and type_id not in \
                    self._qualification_types:
                raise _invalid(f"QualificationType {type_id} does not exist.",
                               "AWS.MechanicalTurk.QualificationTypeDoesNotExist")
            values = (requirement.get("IntegerValues") or []) + \
                     (requirement.get("LocaleValues") or [])
            if comparator in ("Exists", "DoesNotExist") and values:
                raise _invalid(f"Comparator {comparator} takes no values.")
            if comparator in ("In", "NotIn") and not values:
                raise _invalid(f"Comparator {comparator} needs at least one value.")
            if comparator not in ("Exists", "DoesNotExist", "In", "NotIn") and len(values) != 1:
                raise _invalid(f"Comparator {comparator} needs exactly one value.")
        return requirements

    def _check_requirements(self, hit: HIT, worker_id: str) -> None:
        for requirement in hit.hit_type.qualification_requirements:
            type_id = requirement["QualificationTypeId"]
            if type_id in SYSTEM_QUALIFICATION_TYPES:
                continue  # every simulated worker is an approved adult Master in every locale
            qualification = self._qualifications.get((type_id, worker_id))
            held = qualification is not None and qualification.status == "Granted"
            value = qualification.value if held else None
            if not _requirement_met(requirement, held, value):
                raise RehearsalError(f"worker {worker_id} does not meet the requirement "
                                     f"{requirement} of HIT {hit.id}")

    # -- serialisation ------------------------------------------------------------------------

    def _hit_json(self, hit: HIT) -> dict:
        pending, _submitted, reviewed, available = self._counts(hit)
        data = {
            "HITId": hit.id,
            "HITTypeId": hit.hit_type.id,
            "HITGroupId": hit.group_id,
            "CreationTime": hit.created_at,
            "Title": hit.hit_type.title,
            "Description": hit.hit_type.description,
            "Question": hit.question,
            "HITStatus": self._hit_status(hit),
            "MaxAssignments": hit.max_assignments,
            "Reward": _money(hit.hit_type.reward),
            "AutoApprovalDelayInSeconds": hit.hit_type.auto_approval_delay,
            "Expiration": hit.expires_at,
            "AssignmentDurationInSeconds": hit.hit_type.assignment_duration,
            "QualificationRequirements": hit.hit_type.qualification_requirements,
            "HITReviewStatus": "NotReviewed",
            "NumberOfAssignmentsPending": pending,
            "NumberOfAssignmentsAvailable": available,
            "NumberOfAssignmentsCompleted": reviewed,
        }
        if hit.hit_type.keywords:
            data["Keywords"] = hit.hit_type.keywords
        if hit.requester_annotation:
            data["RequesterAnnotation"] = hit.requester_annotation
        return data

    @staticmethod
    def _assignment_json(assignment: Assignment) -> dict:
        data = {
            "AssignmentId": assignment.id,
            "WorkerId": assignment.worker_id,
            "HITId": assignment.hit_id,
            "AssignmentStatus": assignment.status,
            "AcceptTime": assignment.accepted_at,
            "SubmitTime": assignment.submitted_at,
            "Deadline": assignment.deadline,
            "AutoApprovalTime": assignment.auto_approve_at,
            "Answer": assignment.answer,
        }
        optional = {"ApprovalTime": assignment.approved_at,
                    "RejectionTime": assignment.rejected_at,
                    "RequesterFeedback": assignment.requester_feedback}
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    @staticmethod
    def _qualification_type_json(qtype: QualificationType) -> dict:
        data = {
            "QualificationTypeId": qtype.id,
            "CreationTime": qtype.created_at,
            "Name": qtype.name,
            "Description": qtype.description,
            "QualificationTypeStatus": qtype.status,
            "IsRequestable": True,
            "AutoGranted": qtype.auto_granted,
        }
        optional = {"Keywords": qtype.keywords, "Test": qtype.test,
                    "TestDurationInSeconds": qtype.test_duration, "AnswerKey": qtype.answer_key,
                    "RetryDelayInSeconds": qtype.retry_delay,
                    "AutoGrantedValue": qtype.auto_granted_value}
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    # -- operations: HITs ---------------------------------------------------------------------

    def _register_hit_type(self, params: dict) -> HITType:
        self._required(params, "Title", "Description", "Reward", "AssignmentDurationInSeconds")
        reward = self._parse_amount(params["Reward"], "Reward")
        if reward < MIN_REWARD:
            raise _invalid(f"The value {params['Reward']} for Reward is out of range: the "
                           f"minimum is {MIN_REWARD}.", "AWS.ParameterOutOfRange")
        fields = dict(
            title=self._text(params, "Title", MAX_TITLE, required=True),
            description=self._text(params, "Description", MAX_DESCRIPTION, required=True),
            reward=reward,
            assignment_duration=self._int(params, "AssignmentDurationInSeconds", *SECONDS_RANGE),
            auto_approval_delay=self._int(params, "AutoApprovalDelayInSeconds",
                                          *AUTO_APPROVAL_RANGE,
                                          default=DEFAULT_AUTO_APPROVAL_DELAY),
            keywords=self._text(params, "Keywords", MAX_KEYWORDS),
            qualification_requirements=self._validate_requirements(
                params.get("QualificationRequirements")),
        )
        # Registering the same properties again returns the existing HIT type, as MTurk does.
        for existing in self._hit_types.values():
            if all(getattr(existing, name) == value for name, value in fields.items()):
                return existing
        hit_type = HITType(id=self._new_id(), **fields)
        self._hit_types[hit_type.id] = hit_type
        return hit_type

    def _create_hit(self, hit_type: HITType, params: dict) -> dict:
        self._required(params, "LifetimeInSeconds")
        if params.get("HITLayoutId"):
            raise _invalid(f"HITLayout {params['HITLayoutId']} does not exist.",
                           "AWS.MechanicalTurk.HITLayoutDoesNotExist")
        if not params.get("Question"):
            raise _invalid("Either a Question parameter or a HITLayoutId parameter must be "
                           "provided.", "AWS.MissingParameters")
        if not isinstance(params["Question"], str):
            raise _invalid("Question must be a string.")
        kind = validate_question(params["Question"])
        lifetime = self._int(params, "LifetimeInSeconds", *SECONDS_RANGE)
        max_assignments = self._int(params, "MaxAssignments", *MAX_ASSIGNMENTS_RANGE, default=1)
        annotation = self._text(params, "RequesterAnnotation", MAX_ANNOTATION)
        token = self._text(params, "UniqueRequestToken", 64)
        now = self.clock.now()
        if token is not None:
            previous = self._hit_tokens.get(token)
            if previous is not None and now - previous[1] < TOKEN_LIFETIME:
                raise MTurkError(f"There is already a HIT which exists with the same "
                                 f"UniqueRequestToken {token!r}: HIT id {previous[0]}.",
                                 "AWS.MechanicalTurk.HitAlreadyExists")
        rate = LARGE_HIT_FEE_RATE if max_assignments >= LARGE_HIT_ASSIGNMENTS else BASE_FEE_RATE
        self._require_funds(max_assignments * (hit_type.reward + fee_for(hit_type.reward, rate)))
        hit = HIT(id=self._new_id(), hit_type=hit_type, group_id=hit_type.id,
                  question=params["Question"], question_kind=kind,
                  max_assignments=max_assignments, created_at=now, expires_at=now + lifetime,
                  requester_annotation=annotation, unique_request_token=token)
        self._hits[hit.id] = hit
        if token is not None:
            self._hit_tokens[token] = (hit.id, now)
        return {"HIT": self._hit_json(hit)}

    def _op_CreateHITType(self, params: dict) -> dict:
        return {"HITTypeId": self._register_hit_type(params).id}

    def _op_CreateHIT(self, params: dict) -> dict:
        return self._create_hit(self._register_hit_type(params), params)

    def _op_CreateHITWithHITType(self, params: dict) -> dict:
        self._required(params, "HITTypeId")
        hit_type = self._hit_types.get(params["HITTypeId"])
        if hit_type is None:
            raise _invalid(f"HITType {params['HITTypeId']} does not exist.",
                           "AWS.MechanicalTurk.HITTypeDoesNotExist")
        return self._create_hit(hit_type, params)

    def _op_GetHIT(self, params: dict) -> dict:
        self._required(params, "HITId")
        return {"HIT": self._hit_json(self._get_hit(params["HITId"]))}

    def _op_ListHITs(self, params: dict) -> dict:
        hits = [h for h in self._hits.values() if not h.disposed]
        page, extra = self._page(hits, params, "ListHITs")
        return {**extra, "HITs": [self._hit_json(h) for h in page]}

    def _op_UpdateExpirationForHIT(self, params: dict) -> dict:
        self._required(params, "HITId", "ExpireAt")
        hit = self._get_hit(params["HITId"])
        if hit.disposed:
            raise MTurkError(f"Hit {hit.id} has been deleted.",
                             "AWS.MechanicalTurk.InvalidHITState")
        expire_at = _parse_timestamp(params["ExpireAt"])
        now = self.clock.now()
        if expire_at - now > SECONDS_RANGE[1]:
            raise _invalid("ExpireAt must be within one year.", "AWS.ParameterOutOfRange")
        # A time in the past expires the HIT at once.
        hit.expires_at = max(expire_at, now)
        return {}

    def _op_DeleteHIT(self, params: dict) -> dict:
        self._required(params, "HITId")
        hit = self._get_hit(params["HITId"])
        if hit.disposed:
            return {}
        status = self._hit_status(hit)
        _pending, submitted, _reviewed, _available = self._counts(hit)
        if status != "Reviewable" or submitted:
            raise MTurkError(f"This HIT is currently in the state '{status}'"
                             f"{' with assignments awaiting review' if submitted else ''}. "
                             f"This operation can be called with a status of: Reviewable, with "
                             f"every submitted assignment approved or rejected.",
                             "AWS.MechanicalTurk.InvalidHITState")
        hit.disposed = True
        return {}

    # -- operations: assignments --------------------------------------------------------------

    def _op_ListAssignmentsForHIT(self, params: dict) -> dict:
        self._required(params, "HITId")
        hit = self._get_hit(params["HITId"])
        statuses = params.get("AssignmentStatuses") or list(ASSIGNMENT_STATUSES)
        unknown = set(statuses) - set(ASSIGNMENT_STATUSES)
        if unknown:
            raise _invalid(f"AssignmentStatuses must be among {list(ASSIGNMENT_STATUSES)}, "
                           f"not {sorted(unknown)}.")
        assignments = [a for a in self._assignments_of(hit.id) if a.status in statuses]
        page, extra = self._page(assignments, params,
                                 f"ListAssignmentsForHIT:{hit.id}:{','.join(sorted(statuses))}")
        return {**extra, "Assignments": [self._assignment_json(a) for a in page]}

    def _op_GetAssignment(self, params: dict) -> dict:
        self._required(params, "AssignmentId")
        assignment = self._get_assignment(params["AssignmentId"])
        return {"Assignment": self._assignment_json(assignment),
                "HIT": self._hit_json(self._hits[assignment.hit_id])}

    def _op_ApproveAssignment(self, params: dict) -> dict:
        self._required(params, "AssignmentId")
        assignment = self._get_assignment(params["AssignmentId"])
        feedback = self._text(params, "RequesterFeedback", MAX_FEEDBACK)
        now = self.clock.now()
        hit = self._hits[assignment.hit_id]
        overriding = (params.get("OverrideRejection") is True and assignment.status == "Rejected")
        if assignment.status != "Submitted" and not overriding:
            raise MTurkError("This operation can be called with a status of: Submitted",
                             "AWS.MechanicalTurk.InvalidAssignmentState")
        if overriding and hit.disposed:
            raise MTurkError("The HIT of this assignment has been deleted; its rejected "
                             "assignments can no longer be approved.",
                             "AWS.MechanicalTurk.InvalidHITState")
        if overriding and now - (assignment.rejected_at or now) > REJECTION_OVERRIDE_WINDOW:
            raise MTurkError("A rejection can only be overridden within 30 days.",
                             "AWS.MechanicalTurk.InvalidAssignmentState")
        self._require_funds(hit.hit_type.reward + fee_for(hit.hit_type.reward, hit.fee_rate))
        assignment.rejected_at = None
        self._approve(assignment, now, feedback)
        return {}

    def _op_RejectAssignment(self, params: dict) -> dict:
        self._required(params, "AssignmentId", "RequesterFeedback")
        assignment = self._get_assignment(params["AssignmentId"])
        feedback = self._text(params, "RequesterFeedback", MAX_FEEDBACK, required=True)
        if assignment.status != "Submitted":
            raise MTurkError("This operation can be called with a status of: Submitted",
                             "AWS.MechanicalTurk.InvalidAssignmentState")
        assignment.status = "Rejected"
        assignment.rejected_at = self.clock.now()
        assignment.requester_feedback = feedback
        return {}

    # -- operations: bonuses and balance ------------------------------------------------------

    def _op_SendBonus(self, params: dict) -> dict:
        self._required(params, "WorkerId", "BonusAmount", "AssignmentId", "Reason")
        worker_id = self._worker_id(params)
        amount = self._parse_amount(params["BonusAmount"], "BonusAmount")
        if amount < MIN_REWARD:
            raise _invalid(f"The value {params['BonusAmount']} for BonusAmount is out of range: "
                           f"the minimum is {MIN_REWARD}.", "AWS.ParameterOutOfRange")
        reason = self._text(params, "Reason", MAX_FEEDBACK, required=True)
        token = self._text(params, "UniqueRequestToken", 64)
        now = self.clock.now()
        if token is not None:
            seen = self._bonus_tokens.get(token)
            if seen is not None and now - seen < TOKEN_LIFETIME:
                raise MTurkError(f'The idempotency token "{token}" has already been processed.',
                                 "AWS.MechanicalTurk.DuplicateRequest")
        assignment = self._get_assignment(params["AssignmentId"])
        if assignment.worker_id != worker_id:
            raise _invalid(f"Assignment {assignment.id} was not worked on by {worker_id}.")
        hit = self._hits[assignment.hit_id]
        self._require_funds(amount + fee_for(amount, BASE_FEE_RATE))
        self._charge("bonus", hit, assignment, amount, BASE_FEE_RATE, now)
        self._bonuses.append(BonusPayment(worker_id, amount, assignment.id, hit.id, reason, now))
        if token is not None:
            self._bonus_tokens[token] = now
        return {}

    def _op_ListBonusPayments(self, params: dict) -> dict:
        hit_id, assignment_id = params.get("HITId"), params.get("AssignmentId")
        if bool(hit_id) == bool(assignment_id):
            raise _invalid("Either the HITId or the AssignmentId must be given, not both.",
                           "AWS.MissingParameters")
        if hit_id:
            self._get_hit(hit_id)
            bonuses = [b for b in self._bonuses if b.hit_id == hit_id]
            listing = f"ListBonusPayments:hit:{hit_id}"
        else:
            self._get_assignment(assignment_id)
            bonuses = [b for b in self._bonuses if b.assignment_id == assignment_id]
            listing = f"ListBonusPayments:assignment:{assignment_id}"
        page, extra = self._page(bonuses, params, listing)
        return {**extra, "BonusPayments": [
            {"WorkerId": b.worker_id, "BonusAmount": _money(b.amount),
             "AssignmentId": b.assignment_id, "Reason": b.reason, "GrantTime": b.granted_at}
            for b in page]}

    def _op_GetAccountBalance(self, params: dict) -> dict:
        return {"AvailableBalance": _money(self._balance), "OnHoldBalance": "0.00"}

    # -- operations: qualifications -----------------------------------------------------------

    def _op_CreateQualificationType(self, params: dict) -> dict:
        self._required(params, "Name", "Description", "QualificationTypeStatus")
        name = self._text(params, "Name", MAX_TITLE, required=True)
        if any(q.name == name for q in self._qualification_types.values()):
            raise _invalid("You have already created a QualificationType with this name. A "
                           "QualificationType's name must be unique among all of the "
                           "QualificationTypes created by the same user.",
                           "AWS.MechanicalTurk.QualificationTypeAlreadyExists")
        status = params["QualificationTypeStatus"]
        if status not in ("Active", "Inactive"):
            raise _invalid("QualificationTypeStatus must be Active or Inactive.")
        test, answer_key = params.get("Test"), params.get("AnswerKey")
        test_duration = None
        if test:
            questions = question_form_selections(_parse_xml(test, "Test"), "Test")
            self._required(params, "TestDurationInSeconds")
            test_duration = self._int(params, "TestDurationInSeconds", 1, SECONDS_RANGE[1])
            if params.get("AutoGranted"):
                raise _invalid("A QualificationType with a Test cannot be AutoGranted.")
            if answer_key:
                validate_answer_key(answer_key, questions)
        elif answer_key:
            raise _invalid("An AnswerKey needs a Test.", "AWS.MissingParameters")
        retry_delay = params.get("RetryDelayInSeconds")
        if retry_delay is not None:
            retry_delay = self._int(params, "RetryDelayInSeconds", 0, 2 ** 31 - 1)
        qtype = QualificationType(
            id=self._new_id(), name=name,
            description=self._text(params, "Description", MAX_DESCRIPTION, required=True),
            keywords=self._text(params, "Keywords", MAX_KEYWORDS), status=status,
            created_at=self.clock.now(), retry_delay=retry_delay, test=test or None,
            test_duration=test_duration, answer_key=answer_key or None,
            auto_granted=bool(params.get("AutoGranted")),
            auto_granted_value=params.get("AutoGrantedValue"),
        )
        self._qualification_types[qtype.id] = qtype
        return {"QualificationType": self._qualification_type_json(qtype)}

    def _get_qualification_type(self, type_id: Any) -> QualificationType:
        qtype = self._qualification_types.get(type_id) if isinstance(type_id, str) else None
        if qtype is None:
            raise _invalid(f"QualificationType {type_id} does not exist.",
                           "AWS.MechanicalTurk.QualificationTypeDoesNotExist")
        return qtype

    def _op_GetQualificationType(self, params: dict) -> dict:
        self._required(params, "QualificationTypeId")
        qtype = self._get_qualification_type(params["QualificationTypeId"])
        return {"QualificationType": self._qualification_type_json(qtype)}

    def _op_AssociateQualificationWithWorker(self, params: dict) -> dict:
        self._required(params, "QualificationTypeId", "WorkerId")
        qtype = self._get_qualification_type(params["QualificationTypeId"])
        worker_id = self._worker_id(params)
        value = params.get("IntegerValue", 1)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _invalid("IntegerValue must be an integer.")
        self._qualifications[(qtype.id, worker_id)] = Qualification(
            qtype.id, worker_id, value, self.clock.now())
        return {}

    def _op_DisassociateQualificationFromWorker(self, params: dict) -> dict:
        self._required(params, "QualificationTypeId", "WorkerId")
        qtype = self._get_qualification_type(params["QualificationTypeId"])
        worker_id = self._worker_id(params)
        qualification = self._qualifications.get((qtype.id, worker_id))
        if qualification is None or qualification.status != "Granted":
            raise _invalid(f"Worker {worker_id} does not have QualificationType {qtype.id}.",
                           "AWS.MechanicalTurk.QualificationDoesNotExist")
        qualification.status = "Revoked"
        return {}

    def _op_ListWorkersWithQualificationType(self, params: dict) -> dict:
        self._required(params, "QualificationTypeId")
        qtype = self._get_qualification_type(params["QualificationTypeId"])
        status = params.get("Status")
        if status not in (None, "Granted", "Revoked"):
            raise _invalid("Status must be Granted or Revoked.")
        qualifications = [q for q in self._qualifications.values()
                          if q.type_id == qtype.id and status in (None, q.status)]
        page, extra = self._page(qualifications, params,
                                 f"ListWorkersWithQualificationType:{qtype.id}:{status}")
        return {**extra, "Qualifications": [
            {"QualificationTypeId": q.type_id, "WorkerId": q.worker_id, "GrantTime": q.granted_at,
             "IntegerValue": q.value, "Status": q.status} for q in page]}

    # -- operations: worker blocks ------------------------------------------------------------

    def _op_CreateWorkerBlock(self, params: dict) -> dict:
        self._required(params, "WorkerId", "Reason")
        worker_id = self._worker_id(params)
        self._blocks[worker_id] = self._text(params, "Reason", MAX_FEEDBACK, required=True)
        return {}

    def _op_DeleteWorkerBlock(self, params: dict) -> dict:
        self._required(params, "WorkerId")
        self._blocks.pop(self._worker_id(params), None)
        return {}

    def _op_ListWorkerBlocks(self, params: dict) -> dict:
        blocks = list(self._blocks.items())
        page, extra = self._page(blocks, params, "ListWorkerBlocks")
        return {**extra, "WorkerBlocks": [{"WorkerId": w, "Reason": r} for w, r in page]}

    # -- command line -------------------------------------------------------------------------

    @classmethod
    def _add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--balance", default="10000.00", help="starting AvailableBalance")
        parser.add_argument("--seed", type=int, default=None, help="seed for generated ids")

    @classmethod
    def _from_arguments(cls, args: argparse.Namespace) -> FakeMTurkServer:
        return cls(host=args.host, port=args.port, balance=args.balance, seed=args.seed)


def _requirement_met(requirement: dict, held: bool, value: int | None) -> bool:
    comparator = requirement["Comparator"]
    if comparator == "Exists":
        return held
    if comparator == "DoesNotExist":
        return not held
    if not held:
        return False
    wanted = requirement.get("IntegerValues") or []
    if not wanted:  # a locale comparison against a requester qualification: nothing to compare
        return False
    tests = {
        "LessThan": lambda: value < wanted[0],
        "LessThanOrEqualTo": lambda: value <= wanted[0],
        "GreaterThan": lambda: value > wanted[0],
        "GreaterThanOrEqualTo": lambda: value >= wanted[0],
        "EqualTo": lambda: value == wanted[0],
        "NotEqualTo": lambda: value != wanted[0],
        "In": lambda: value in wanted,
        "NotIn": lambda: value not in wanted,
    }
    return tests[comparator]()


def _parse_timestamp(value: Any) -> float:
    """botocore sends timestamps as epoch seconds in JSON 1.1; accept ISO 8601 too."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.timezone.utc)
            return parsed.timestamp()
    raise _invalid(f"{value!r} is not a timestamp.")


def main(argv: Sequence[str] | None = None) -> None:
    FakeMTurkServer.main(argv, description="Local fake of the Amazon Mechanical Turk requester "
                                           "API (AWS JSON 1.1).")


if __name__ == "__main__":
    main()
