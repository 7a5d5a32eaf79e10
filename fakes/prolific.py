"""A local Prolific API (REST, v1) that speaks the real wire protocol.

JSON over HTTP under ``/api/v1/``, authenticated with ``Authorization: Token <key>``; errors are
``{"error": {"status", "error_code", "title", "detail"}}`` as Prolific sends them. It keeps
one workspace with one project, studies, submissions, bonus records and the workspace balance,
and enforces the rules a client must respect (only documented fields, URL placeholders,
minor-unit rewards, REJECT messages of 100+ characters with a category, transitions only from
AWAITING REVIEW, paged listings, the two-step bonus whose *pay* is not idempotent and settles
minutes later).

    with FakeProlificServer() as fake:
        client = httpx.Client(base_url=fake.url, headers={"Authorization": "Token test"})
        study = client.post("/api/v1/studies/", json={...}).json()
        client.post(f"/api/v1/studies/{study['id']}/transition/", json={"action": "PUBLISH"})
        fake.simulate_participant(study["id"])  # a participant takes part and enters the code

From the command line: ``python -m fakes.prolific --port 8767``; the rehearsal controls
are then ``POST /_fake/<method>`` with keyword arguments as JSON. See docs/fakes.md.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlencode, urlsplit

from fakes._http import FakeService, HTTPRequest, HTTPResponse

API_PREFIX = "/api/v1"
PLACEHOLDER = re.compile(r"\{\{%([A-Z_]+)%\}\}")
KNOWN_PLACEHOLDERS = frozenset({"PROLIFIC_PID", "STUDY_ID", "SESSION_ID"})
PROLIFIC_ID_OPTIONS = frozenset({"question", "url_parameters", "not_required"})
DEVICES = frozenset({"desktop", "tablet", "mobile"})
# The filters this fake knows, by kind (Prolific lists many more at GET /api/v1/filters/).
FILTERS = {"first-language": "select", "fluent-languages": "select", "approval_rate": "range",
           "approval_numbers": "range", "age": "range"}
CODE_TYPES = frozenset({"COMPLETED", "FAILED_ATTENTION_CHECK", "FOLLOW_UP_STUDY", "GIVE_BONUS",
                        "INCOMPATIBLE_DEVICE", "NO_CONSENT", "OTHER"})
CODE_ACTIONS = frozenset({"AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW", "ADD_TO_PARTICIPANT_GROUP",
                          "REMOVE_FROM_PARTICIPANT_GROUP", "REQUEST_RETURN", "DYNAMIC_PAYMENT"})
STUDY_ACTIONS = frozenset({"PUBLISH", "PAUSE", "START", "STOP"})
REJECTION_CATEGORIES = frozenset({
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
    "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
})
MIN_REJECTION_MESSAGE = 100
# Study statuses.
UNPUBLISHED, ACTIVE, PAUSED, AWAITING_REVIEW, COMPLETED = (
    "UNPUBLISHED", "ACTIVE", "PAUSED", "AWAITING REVIEW", "COMPLETED")
# Submission statuses, spelled as the API spells them (with a space and a hyphen).
S_ACTIVE, S_AWAITING_REVIEW, S_APPROVED, S_REJECTED, S_RETURNED, S_TIMED_OUT = (
    "ACTIVE", "AWAITING REVIEW", "APPROVED", "REJECTED", "RETURNED", "TIMED-OUT")
PLACE_HOLDING_STATUSES = frozenset({S_ACTIVE, S_AWAITING_REVIEW, S_APPROVED})
MAX_PAGE_SIZE = 200
# Fields of a study creation request that Prolific's API reference documents; others are refused.
STUDY_FIELDS = frozenset({
    "name", "internal_name", "description", "external_study_url", "prolific_id_option",
    "completion_codes", "completion_code", "completion_option", "total_available_places",
    "estimated_completion_time", "maximum_allowed_time", "reward", "device_compatibility",
    "peripheral_requirements", "filters", "filter_set_id", "filter_set_version", "project",
    "study_labels", "content_warnings", "content_warning_details", "naivety_distribution_rate",
    "submissions_config", "metadata", "is_custom_screening", "privacy_notice",
})
# Prolific pays bonuses "in the following minutes"; the fake settles a pay call this much later.
BONUS_SETTLE_SECONDS = 120

# Error codes of the fake (Prolific numbers its errors; clients should key on the HTTP status).
ERROR_CODES = {400: 140001, 401: 140100, 403: 140300, 404: 140400, 405: 140500, 429: 140429,
               500: 140900, 502: 140900, 503: 140900, 504: 140900}
ERROR_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                405: "Method Not Allowed", 429: "Too Many Requests",
                500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
                504: "Gateway Timeout"}


class ProlificError(Exception):
    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(str(detail))
        self.status = status
        self.detail = detail


class RehearsalError(ValueError):
    """A rehearsal control was asked for something a real participant could not do."""


def error_response(status: int, detail: Any,
                   headers: dict[str, str] | None = None) -> HTTPResponse:
    return HTTPResponse.json(status, {"error": {
        "status": status,
        "error_code": ERROR_CODES.get(status, 140000 + status),
        "title": ERROR_TITLES.get(status, "Error"),
        "detail": detail,
    }}, headers=headers)


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    moment = dt.datetime.fromtimestamp(timestamp, dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Study:
    id: str
    name: str
    internal_name: str | None
    description: str
    external_study_url: str
    prolific_id_option: str
    completion_codes: list[dict]
    total_available_places: int
    estimated_completion_time: int
    maximum_allowed_time: int
    reward: int
    device_compatibility: list[str]
    peripheral_requirements: list[str]
    filters: list[dict]
    created_at: float
    project: str
    status: str = UNPUBLISHED
    published_at: float | None = None
    stopped: bool = False


@dataclass
class Submission:
    id: str
    study_id: str
    participant_id: str
    started_at: float
    status: str = S_ACTIVE
    completed_at: float | None = None
    study_code: str | None = None
    bonus_payments: list[int] = field(default_factory=list)
    rejection_message: str | None = None
    rejection_category: str | None = None


@dataclass
class BonusRecord:
    id: str
    study_id: str
    lines: list[tuple[str, int]]  # (participant id, amount in minor units)
    amount: int
    fees: int
    created_at: float
    times_paid: int = 0  # pay calls accepted
    settling: list[float] = field(default_factory=list)  # when each accepted pay call settles


@dataclass(frozen=True)
class Payment:
    """Money that left the workspace: a reward on approval or one *pay* of a bonus record."""

    kind: str  # "reward" | "bonus"
    study_id: str
    reference: str  # submission id or bonus record id
    amount: int  # minor units, fees excluded
    fees: int
    at: float


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern
    template: str
    handler: str


def _route(method: str, template: str, handler: str) -> _Route:
    regex = re.escape(API_PREFIX + template).replace(r"\{id\}", r"(?P<id>[^/]+)")
    return _Route(method, re.compile(f"^{regex}$"), f"{method} {API_PREFIX}{template}", handler)


ROUTES = (
    _route("GET", "/users/me/", "_get_me"),
    _route("GET", "/workspaces/", "_list_workspaces"),
    _route("GET", "/workspaces/{id}/balance/", "_get_balance"),
    _route("POST", "/studies/", "_create_study"),
    _route("GET", "/studies/", "_list_studies"),
    _route("GET", "/studies/{id}/", "_get_study"),
    _route("POST", "/studies/{id}/transition/", "_transition_study"),
    _route("GET", "/studies/{id}/submissions/", "_list_submissions"),
    _route("GET", "/submissions/", "_list_submissions_of_study"),
    _route("POST", "/submissions/bonus-payments/", "_create_bonus"),
    _route("GET", "/submissions/{id}/", "_get_submission"),
    _route("POST", "/submissions/{id}/transition/", "_transition_submission"),
    _route("POST", "/bulk-bonus-payments/{id}/pay/", "_pay_bonus"),
)


class FakeProlificServer(FakeService):
    """Stateful, thread-safe fake of Prolific's REST API v1."""

    DEFAULT_PORT = 8767
    CONTROL_METHODS = FakeService.CONTROL_METHODS | frozenset({
        "start_submission", "complete_submission", "return_submission", "simulate_participant",
        "fail_next", "clear_faults", "set_balance", "get_balance", "payments", "total_paid",
        "total_bonus_paid", "settle_bonus_payments", "bonus_payments_settling",
    })

    def __init__(self, host: str = "127.0.0.1", port: int = 0, api_token: str | None = None,
                 balance: int = 1_000_000, currency_code: str = "GBP", fee_rate: str = "0.3333",
                 page_size: int = 20, minimum_hourly_reward: int = 600,
                 bonus_settle_seconds: float = BONUS_SETTLE_SECONDS,
                 seed: int | None = None) -> None:
        super().__init__(host, port)
        self.api_token = api_token  # None: any non-empty token is accepted
        self.currency_code = currency_code
        self.fee_rate = Decimal(fee_rate)
        self.page_size = page_size
        self.minimum_hourly_reward = minimum_hourly_reward  # minor units per hour
        self._random = random.Random(seed)
        self._balance = int(balance)  # minor units
        self._studies: dict[str, Study] = {}
        self._submissions: dict[str, Submission] = {}
        self._bonus_records: dict[str, BonusRecord] = {}
        self._payments: list[Payment] = []
        self.bonus_settle_seconds = bonus_settle_seconds
        self.workspace_id = self._new_id()
        self.project_id = self._new_id()
        self.user_id = self._new_id()

    # -- rehearsal controls -------------------------------------------------------------------

    def fail_next(self, count: int = 1, operation: str | None = None, status: int = 503,
                  retry_after: int | None = None, after_processing: bool = False) -> None:
        """Answer the next ``count`` calls (of ``operation``, e.g. ``"POST
        /api/v1/bulk-bonus-payments/{id}/pay/"``, or any) with ``status`` (429 or 5xx).

        With ``after_processing`` the call takes effect and only its answer is lost.
        """
        if status != 429 and not 500 <= status <= 599:
            raise ValueError("status must be 429 or a 5xx code")
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        detail = ("Request was throttled." if status == 429
                  else "The server could not process the request; try again.")
        self._add_fault(count, operation, lambda: error_response(status, detail, headers),
                        after_processing)

    def set_balance(self, amount: int) -> int:
        """Set the workspace balance, in minor units."""
        with self._lock:
            self._balance = int(amount)
            return self._balance

    def get_balance(self) -> int:
        with self._lock:
            return self._balance

    def payments(self) -> list[Payment]:
        """Every payment made: rewards on approval and every settled *pay* of a bonus record."""
        with self._lock:
            self._refresh()  # what is due by the fake's clock has settled
            return list(self._payments)

    def total_paid(self, kind: str | None = None) -> int:
        """Minor units paid to participants (fees excluded), optionally "reward" or "bonus"."""
        with self._lock:
            self._refresh()  # what is due by the fake's clock has settled
            return sum(p.amount for p in self._payments if kind in (None, p.kind))

    def settle_bonus_payments(self) -> int:
        """Settle every accepted bonus pay call now, as Prolific does minutes later; returns how many."""
        with self._lock:
            return self._settle_bonuses(until=None)

    def bonus_payments_settling(self) -> int:
        """Accepted bonus pay calls not yet settled."""
        with self._lock:
            self._refresh()  # what is due by the fake's clock has settled
            return sum(len(record.settling) for record in self._bonus_records.values())

    def total_bonus_paid(self, participant_id: str | None = None) -> int:
        """Settled bonus minor units, in total or to one participant: double payment shows here."""
        with self._lock:
            self._refresh()  # what is due by the fake's clock has settled
            total = 0
            for payment in self._payments:
                if payment.kind != "bonus":
                    continue
                record = self._bonus_records[payment.reference]
                total += sum(amount for pid, amount in record.lines
                             if participant_id in (None, pid))
            return total

    def start_submission(self, study_id: str, participant_id: str | None = None) -> dict:
        """A participant opens the study; returns the submission and the URL they land on."""
        with self._lock:
            self._refresh()
            study = self._studies.get(study_id)
            if study is None:
                raise RehearsalError(f"study {study_id} does not exist")
            if study.status != ACTIVE:
                raise RehearsalError(f"study {study_id} is {study.status}, not ACTIVE")
            if self._places_taken(study) >= study.total_available_places:
                raise RehearsalError(f"study {study_id} has no place left")
            participant_id = participant_id or self._new_id()
            if any(s.participant_id == participant_id for s in self._submissions_of(study_id)):
                raise RehearsalError(f"participant {participant_id} already took part")
            submission = Submission(self._new_id(), study_id, participant_id, self.clock.now())
            self._submissions[submission.id] = submission
            # Prolific passes the submission id as SESSION_ID.
            values = {"PROLIFIC_PID": participant_id, "STUDY_ID": study_id,
                      "SESSION_ID": submission.id}
            url = PLACEHOLDER.sub(lambda m: values[m.group(1)], study.external_study_url)
            return {**self._submission_json(submission), "study_url": url}

    def complete_submission(self, submission_id: str, code: str | None = None,
                            time_taken: int | None = None) -> dict:
        """The participant finishes and enters ``code`` (default: the study's COMPLETED code).

        A code whose actions include AUTOMATICALLY_APPROVE approves (and pays) at once; any other
        code, or an unknown one, leaves the submission AWAITING REVIEW. ``time_taken`` (seconds)
        backdates the start so reports see a realistic duration.
        """
        with self._lock:
            self._refresh()
            submission = self._submissions.get(submission_id)
            if submission is None or submission.status != S_ACTIVE:
                state = submission.status if submission else "unknown"
                raise RehearsalError(f"submission {submission_id} is {state}, not ACTIVE")
            study = self._studies[submission.study_id]
            if code is None:
                code = next((c["code"] for c in study.completion_codes
                             if c["code_type"] == "COMPLETED"), study.completion_codes[0]["code"])
            now = self.clock.now()
            if time_taken is not None:
                submission.started_at = now - time_taken
            submission.completed_at = now
            submission.study_code = code
            submission.status = S_AWAITING_REVIEW
            matched = next((c for c in study.completion_codes if c["code"] == code), None)
            actions = {a.get("action") for a in (matched or {}).get("actions", [])}
            if "AUTOMATICALLY_APPROVE" in actions:
                self._approve(submission, now)
            self._update_study_status(study)
            return self._submission_json(submission)

    def return_submission(self, submission_id: str) -> dict:
        """The participant returns the study; the place opens again."""
        with self._lock:
            submission = self._submissions.get(submission_id)
            if submission is None or submission.status != S_ACTIVE:
                raise RehearsalError(f"submission {submission_id} is not ACTIVE")
            submission.status = S_RETURNED
            self._update_study_status(self._studies[submission.study_id])
            return self._submission_json(submission)

    def simulate_participant(self, study_id: str, code: str | None = None,
                             participant_id: str | None = None,
                             time_taken: int | None = None) -> dict:
        """Start and complete a submission in one step; returns the submission."""
        with self._lock:
            started = self.start_submission(study_id, participant_id)
            return {**self.complete_submission(started["id"], code, time_taken),
                    "study_url": started["study_url"]}

    # -- protocol -----------------------------------------------------------------------------

    def _match(self, request: HTTPRequest) -> tuple[_Route | None, str | None, bool]:
        """(route, path id, whether the path exists under another method)."""
        path = request.path if request.path.endswith("/") else request.path + "/"
        other_method = False
        for route in ROUTES:
            match = route.pattern.match(path)
            if match:
                if route.method == request.method:
                    return route, match.groupdict().get("id"), False
                other_method = True
        return None, None, other_method

    def _operation_of(self, request: HTTPRequest) -> tuple[str, Any]:
        route, path_id, _ = self._match(request)
        operation = route.template if route else f"{request.method} {request.path}"
        try:
            body = request.json()
        except (ValueError, UnicodeDecodeError):
            body = request.body.decode("utf-8", "replace")
        params = {"path_id": path_id, "query": request.query, "body": body}
        return operation, params

    def _error_code_of(self, response: HTTPResponse) -> str | None:
        return None if response.status < 400 else str(response.status)

    def _handle(self, request: HTTPRequest, operation: str, params: Any) -> HTTPResponse:
        authorization = request.header("authorization")
        scheme, _, token = authorization.partition(" ")
        if scheme != "Token" or not token.strip():
            return error_response(401, "Authentication credentials were not provided.")
        if self.api_token is not None and token.strip() != self.api_token:
            return error_response(401, "Invalid token.")
        route, path_id, other_method = self._match(request)
        if route is None:
            if other_method:
                return error_response(405, f'Method "{request.method}" not allowed.')
            return error_response(404, "Not found.")
        body = params["body"]
        if request.method == "POST" and body is None:
            body = {}  # e.g. the pay endpoint takes no body
        if request.method == "POST" and not isinstance(body, dict):
            return error_response(400, "The request body must be a JSON object.")
        try:
            self._refresh()
            status, payload = getattr(self, route.handler)(path_id, body, request)
        except ProlificError as exc:
            return error_response(exc.status, exc.detail)
        return HTTPResponse.json(status, payload)

    # -- time-driven state --------------------------------------------------------------------

    def _refresh(self) -> None:
        """Settle bonus payments that are due; time out submissions that ran past the study's
        maximum allowed time."""
        now = self.clock.now()
        self._settle_bonuses(until=now)
        for submission in self._submissions.values():
            study = self._studies[submission.study_id]
            if (submission.status == S_ACTIVE
                    and now - submission.started_at > study.maximum_allowed_time * 60):
                submission.status = S_TIMED_OUT
                self._update_study_status(study)

    def _submissions_of(self, study_id: str) -> list[Submission]:
        return [s for s in self._submissions.values() if s.study_id == study_id]

    def _places_taken(self, study: Study) -> int:
        return sum(s.status in PLACE_HOLDING_STATUSES for s in self._submissions_of(study.id))

    def _update_study_status(self, study: Study) -> None:
        """A full (or stopped) study waits for review, then completes; a freed place reopens it."""
        if study.status in (UNPUBLISHED, PAUSED):
            return
        submissions = self._submissions_of(study.id)
        in_progress = any(s.status == S_ACTIVE for s in submissions)
        awaiting = any(s.status == S_AWAITING_REVIEW for s in submissions)
        full = self._places_taken(study) >= study.total_available_places
        if not study.stopped and (not full or in_progress):
            study.status = ACTIVE
        else:
            study.status = AWAITING_REVIEW if awaiting or in_progress else COMPLETED

    # -- money --------------------------------------------------------------------------------

    def _settle_bonuses(self, until: float | None) -> int:
        """Pay the accepted pay calls due by ``until`` (all with None): the money leaves the
        workspace and the amounts appear in the submissions' ``bonus_payments``."""
        settled = 0
        for record in self._bonus_records.values():
            due = [at for at in record.settling if until is None or at <= until]
            for at in due:
                record.settling.remove(at)
                self._balance -= record.amount + record.fees
                self._payments.append(Payment("bonus", record.study_id, record.id, record.amount,
                                              record.fees, at))
                for participant_id, amount in record.lines:
                    for submission in self._submissions_of(record.study_id):
                        if submission.participant_id == participant_id:
                            submission.bonus_payments.append(amount)
                settled += 1
        return settled

    def _fee(self, amount: int) -> int:
        return int((Decimal(amount) * self.fee_rate).quantize(Decimal(1), ROUND_HALF_UP))

    def _approve(self, submission: Submission, now: float) -> None:
        study = self._studies[submission.study_id]
        submission.status = S_APPROVED
        fees = self._fee(study.reward)
        self._balance -= study.reward + fees
        self._payments.append(Payment("reward", study.id, submission.id, study.reward, fees, now))

    # -- ids ----------------------------------------------------------------------------------

    def _new_id(self, length: int = 24) -> str:
        # Prolific ids are 24 hexadecimal characters (MongoDB ObjectIds).
        return "".join(self._random.choice("0123456789abcdef") for _ in range(length))

    # -- serialisation ------------------------------------------------------------------------

    def _study_json(self, study: Study) -> dict:
        submissions = self._submissions_of(study.id)
        places = study.total_available_places
        return {
            "id": study.id,
            "name": study.name,
            "internal_name": study.internal_name,
            "description": study.description,
            "external_study_url": study.external_study_url,
            "prolific_id_option": study.prolific_id_option,
            "completion_codes": study.completion_codes,
            "total_available_places": places,
            "places_taken": self._places_taken(study),
            "number_of_submissions": len(submissions),
            "estimated_completion_time": study.estimated_completion_time,
            "maximum_allowed_time": study.maximum_allowed_time,
            "reward": study.reward,
            "currency_code": self.currency_code,
            "total_cost": places * (study.reward + self._fee(study.reward)),
            "device_compatibility": study.device_compatibility,
            "peripheral_requirements": study.peripheral_requirements,
            "filters": study.filters,
            "status": study.status,
            "study_type": "SINGLE",
            "date_created": _iso(study.created_at),
            "published_at": _iso(study.published_at),
            "project": study.project,
        }

    def _submission_json(self, submission: Submission) -> dict:
        study = self._studies[submission.study_id]
        time_taken = (None if submission.completed_at is None
                      else int(submission.completed_at - submission.started_at))
        return {
            "id": submission.id,
            "study_id": submission.study_id,
            "participant_id": submission.participant_id,
            "status": submission.status,
            "started_at": _iso(submission.started_at),
            "completed_at": _iso(submission.completed_at),
            "is_complete": submission.completed_at is not None,
            "time_taken": time_taken,
            "reward": study.reward,
            "study_code": submission.study_code,
            "bonus_payments": list(submission.bonus_payments),
            "return_requested": None,
        }

    # -- validation helpers -------------------------------------------------------------------

    @staticmethod
    def _positive_int(body: dict, name: str, errors: dict, required: bool = True) -> int | None:
        value = body.get(name)
        if value is None:
            if required:
                errors[name] = ["This field is required."]
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            errors[name] = ["A valid integer is required."]
            return None
        if value < 1:
            errors[name] = ["Ensure this value is greater than or equal to 1."]
            return None
        return value

    @staticmethod
    def _check_url(url: Any, option: Any, errors: dict) -> None:
        if not isinstance(url, str) or not url:
            errors["external_study_url"] = ["This field is required."]
            return
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            errors["external_study_url"] = ["Enter a valid URL."]
            return
        problems = []
        found = PLACEHOLDER.findall(url)
        unknown = sorted(set(found) - KNOWN_PLACEHOLDERS)
        if unknown:
            problems.append(f"Unknown placeholder(s): {', '.join(unknown)}; use "
                            f"{{{{%PROLIFIC_PID%}}}}, {{{{%STUDY_ID%}}}} or {{{{%SESSION_ID%}}}}.")
        if re.search(r"\{\{(?!%[A-Z_]+%\}\})", url):
            problems.append("Malformed placeholder: placeholders are written {{%NAME%}}.")
        if option == "url_parameters" and "PROLIFIC_PID" not in found:
            problems.append("With prolific_id_option 'url_parameters' the URL must carry "
                            "{{%PROLIFIC_PID%}}.")
        if problems:
            errors["external_study_url"] = problems

    @staticmethod
    def _check_filters(filters: Any, errors: dict) -> None:
        """Prolific's study filters: select filters take ``selected_values`` (choice ids as strings),
        range filters ``selected_range`` with ``lower`` and/or ``upper``."""
        if filters is None:
            return
        if not isinstance(filters, list):
            errors["filters"] = ["Must be a list of filters."]
            return
        for number, entry in enumerate(filters):
            if not isinstance(entry, dict) or entry.get("filter_id") not in FILTERS:
                errors["filters"] = [f"Filter {number}: unknown filter_id; known: {sorted(FILTERS)}."]
                return
            kind = FILTERS[entry["filter_id"]]
            if kind == "select":
                values = entry.get("selected_values")
                if "selected_range" in entry or not isinstance(values, list) or not values or not all(
                        isinstance(value, str) for value in values):
                    errors["filters"] = [f"Filter {entry['filter_id']}: selected_values must be a non-empty list "
                                         "of choice ids (strings)."]
                    return
            else:
                bounds = entry.get("selected_range")
                if ("selected_values" in entry or not isinstance(bounds, dict) or not bounds
                        or set(bounds) - {"lower", "upper"}
                        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds.values())):
                    errors["filters"] = [f"Filter {entry['filter_id']}: selected_range must give lower and/or upper "
                                         "as numbers."]
                    return

    @staticmethod
    def _check_completion_codes(codes: Any, errors: dict) -> list[dict]:
        if not isinstance(codes, list) or not codes:
            errors["completion_codes"] = ["At least one completion code is required."]
            return []
        problems, seen, cleaned = [], set(), []
        for index, entry in enumerate(codes):
            if not isinstance(entry, dict):
                problems.append(f"[{index}] must be an object.")
                continue
            code, code_type = entry.get("code"), entry.get("code_type")
            actions = entry.get("actions", [])
            if not isinstance(code, str) or not code.strip():
                problems.append(f"[{index}].code is required.")
            elif code in seen:
                problems.append(f"[{index}].code {code!r} is used twice.")
            seen.add(code)
            if code_type not in CODE_TYPES:
                problems.append(f"[{index}].code_type must be one of {sorted(CODE_TYPES)}.")
            if not isinstance(actions, list) or any(
                    not isinstance(a, dict) or a.get("action") not in CODE_ACTIONS
                    for a in actions):
                problems.append(f"[{index}].actions must be objects whose action is one of "
                                f"{sorted(CODE_ACTIONS)}.")
            cleaned.append({"code": code, "code_type": code_type, "actions": actions,
                            "actor": entry.get("actor", "participant")})
        if problems:
            errors["completion_codes"] = problems
        return cleaned

    def _get(self, store: dict, key: str | None, what: str):
        item = store.get(key or "")
        if item is None:
            raise ProlificError(404, f"{what} not found.")
        return item

    # -- handlers -----------------------------------------------------------------------------

    def _get_me(self, _id, _body, _request) -> tuple[int, dict]:
        # Only documented fields: the workspace is not part of the user (see the workspaces endpoint).
        return 200, {"id": self.user_id, "name": "Researcher", "email": "researcher@example.org"}

    def _list_workspaces(self, _id, _body, request: HTTPRequest) -> tuple[int, dict]:
        workspace = {"id": self.workspace_id, "title": "Workspace", "description": "",
                     "owner": self.user_id, "projects": [{"id": self.project_id}]}
        return 200, self._paged([workspace], request, lambda w: w)

    def _get_balance(self, workspace_id, _body, _request) -> tuple[int, dict]:
        if workspace_id != self.workspace_id:
            raise ProlificError(404, "Workspace not found.")
        # What is reserved for accepted pay calls that have not settled yet is not available.
        reserved = sum((r.amount + r.fees) * len(r.settling) for r in self._bonus_records.values())
        spent = {"rewards": sum(p.amount for p in self._payments if p.kind == "reward"),
                 "bonuses": sum(p.amount for p in self._payments if p.kind == "bonus"),
                 "fees": sum(p.fees for p in self._payments), "vat": 0}
        return 200, {"currency_code": self.currency_code, "total_balance": self._balance,
                     "balance_breakdown": spent, "available_balance": self._balance - reserved,
                     "available_balance_breakdown": spent}

    def _create_study(self, _id, body: dict, _request) -> tuple[int, dict]:
        errors: dict[str, list[str]] = {}
        for name in sorted(set(body) - STUDY_FIELDS):
            errors[name] = ["This field is not part of the API."]
        project = body.get("project", self.project_id)
        if project != self.project_id:
            errors["project"] = ["No project with this id in the workspace."]
        for name in ("name", "description"):
            if not isinstance(body.get(name), str) or not body[name].strip():
                errors[name] = ["This field is required."]
        option = body.get("prolific_id_option", "url_parameters")
        if option not in PROLIFIC_ID_OPTIONS:
            errors["prolific_id_option"] = [f"Must be one of {sorted(PROLIFIC_ID_OPTIONS)}."]
        self._check_url(body.get("external_study_url"), option, errors)
        if "completion_code" in body and "completion_codes" not in body:
            errors["completion_codes"] = ["This field is required; the single completion_code "
                                          "and completion_option fields are not supported."]
            codes = []
        else:
            codes = self._check_completion_codes(body.get("completion_codes"), errors)
        places = self._positive_int(body, "total_available_places", errors)
        minutes = self._positive_int(body, "estimated_completion_time", errors)
        maximum = self._positive_int(body, "maximum_allowed_time", errors, required=False)
        reward = body.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, int):
            # Rewards are integers in minor units (pence, cents): 1.5 or "150" is a client bug.
            errors["reward"] = ["A valid integer (minor currency units) is required."]
        elif reward < 1:
            errors["reward"] = ["Ensure this value is greater than or equal to 1."]
        elif minutes and reward * 60 < self.minimum_hourly_reward * minutes:
            errors["reward"] = [f"The reward must pay at least {self.minimum_hourly_reward} "
                                f"minor units per hour for the estimated completion time."]
        devices = body.get("device_compatibility", sorted(DEVICES))
        if not isinstance(devices, list) or not devices or set(devices) - DEVICES:
            errors["device_compatibility"] = [f"Choose one or more of {sorted(DEVICES)}."]
        if maximum is not None and minutes and maximum < minutes:
            errors["maximum_allowed_time"] = ["Must not be less than estimated_completion_time."]
        self._check_filters(body.get("filters"), errors)
        if errors:
            raise ProlificError(400, errors)
        study = Study(
            id=self._new_id(), name=body["name"], internal_name=body.get("internal_name"),
            description=body["description"], external_study_url=body["external_study_url"],
            prolific_id_option=option, completion_codes=codes, total_available_places=places,
            estimated_completion_time=minutes,
            # Prolific's default time limit is generous; here twice the estimate plus 2 minutes.
            maximum_allowed_time=maximum or minutes * 2 + 2, reward=reward,
            device_compatibility=list(devices),
            peripheral_requirements=list(body.get("peripheral_requirements") or []),
            filters=list(body.get("filters") or []), created_at=self.clock.now(), project=project,
        )
        self._studies[study.id] = study
        return 201, self._study_json(study)

    def _list_studies(self, _id, _body, request: HTTPRequest) -> tuple[int, dict]:
        return 200, self._paged(list(self._studies.values()), request, self._study_json)

    def _get_study(self, study_id, _body, _request) -> tuple[int, dict]:
        return 200, self._study_json(self._get(self._studies, study_id, "Study"))

    def _transition_study(self, study_id, body: dict, _request) -> tuple[int, dict]:
        study = self._get(self._studies, study_id, "Study")
        action = body.get("action")
        if action not in STUDY_ACTIONS:
            raise ProlificError(400, {"action": [f"Must be one of {sorted(STUDY_ACTIONS)}."]})
        allowed = {"PUBLISH": (UNPUBLISHED,), "PAUSE": (ACTIVE,), "START": (PAUSED,),
                   "STOP": (ACTIVE, PAUSED)}[action]
        if study.status not in allowed:
            raise ProlificError(400, f"Cannot {action} a study whose status is {study.status}.")
        if action == "PUBLISH":
            cost = study.total_available_places * (study.reward + self._fee(study.reward))
            if cost > self._balance:
                raise ProlificError(400, f"Insufficient funds: publishing costs {cost}, the "
                                         f"workspace balance is {self._balance}.")
            study.published_at = self.clock.now()
            study.status = ACTIVE
        elif action == "PAUSE":
            study.status = PAUSED
        elif action == "START":
            study.status = ACTIVE
        else:
            study.stopped = True
            study.status = ACTIVE  # let the status rule settle it
        self._update_study_status(study)
        return 200, self._study_json(study)

    def _list_submissions_of_study(self, _id, body, request: HTTPRequest) -> tuple[int, dict]:
        study_id = (request.query.get("study") or [""])[0]
        if not study_id:
            raise ProlificError(400, {"study": ["This query parameter is required."]})
        return self._list_submissions(study_id, body, request)

    def _list_submissions(self, study_id, _body, request: HTTPRequest) -> tuple[int, dict]:
        study = self._get(self._studies, study_id, "Study")
        # Arrival order, so pages stay stable.
        return 200, self._paged(self._submissions_of(study.id), request, self._submission_json)

    def _paged(self, rows: list, request: HTTPRequest, to_json) -> dict:
        """One page as Prolific pages: ``results``, ``_links`` with absolute hrefs, ``meta.count``."""
        try:
            page = int((request.query.get("page") or ["1"])[0])
            size = int((request.query.get("page_size") or [str(self.page_size)])[0])
        except ValueError:
            raise ProlificError(400, "page and page_size must be integers.") from None
        if page < 1 or not 1 <= size <= MAX_PAGE_SIZE:
            raise ProlificError(400, f"page must be >= 1 and page_size between 1 and "
                                     f"{MAX_PAGE_SIZE}.")
        last = max(1, -(-len(rows) // size))
        if page > last and rows:
            raise ProlificError(404, "Invalid page.")
        count = len(rows)
        rows = rows[(page - 1) * size: page * size]

        def link(number: int | None, title: str) -> dict:
            if number is None:
                return {"href": None, "title": title}
            query = urlencode({**{k: v[0] for k, v in request.query.items()},
                               "page": number, "page_size": size})
            return {"href": f"{self.url}{request.path}?{query}", "title": title}

        return {
            "results": [to_json(row) for row in rows],
            "_links": {
                "self": link(page, "Current"),
                "next": link(page + 1 if page < last else None, "Next"),
                "previous": link(page - 1 if page > 1 else None, "Previous"),
                "last": link(last, "Last"),
            },
            "meta": {"count": count},
        }

    def _get_submission(self, submission_id, _body, _request) -> tuple[int, dict]:
        return 200, self._submission_json(self._get(self._submissions, submission_id,
                                                    "Submission"))

    def _transition_submission(self, submission_id, body: dict, _request) -> tuple[int, dict]:
        submission = self._get(self._submissions, submission_id, "Submission")
        action = body.get("action")
        if action not in ("APPROVE", "REJECT"):
            raise ProlificError(400, {"action": ["Must be APPROVE or REJECT."]})
        if action == "REJECT":
            errors = {}
            message = body.get("message")
            if not isinstance(message, str) or len(message.strip()) < MIN_REJECTION_MESSAGE:
                errors["message"] = [f"A rejection needs a message of at least "
                                     f"{MIN_REJECTION_MESSAGE} characters explaining why."]
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                errors["rejection_category"] = [
                    f"Must be one of {sorted(REJECTION_CATEGORIES)}."]
            if errors:
                raise ProlificError(400, errors)
        if (action, submission.status) in (("APPROVE", S_APPROVED), ("REJECT", S_REJECTED)):
            # Documented as idempotent: a repeated transition is ignored, nothing is paid again.
            return 200, self._submission_json(submission)
        if submission.status != S_AWAITING_REVIEW:
            raise ProlificError(400, f"Cannot {action} a submission whose status is "
                                     f"{submission.status}; it must be {S_AWAITING_REVIEW}.")
        if action == "APPROVE":
            self._approve(submission, self.clock.now())
        else:
            submission.status = S_REJECTED
            submission.rejection_message = body["message"]
            submission.rejection_category = body["rejection_category"]
        self._update_study_status(self._studies[submission.study_id])
        return 200, self._submission_json(submission)

    def _create_bonus(self, _id, body: dict, _request) -> tuple[int, dict]:
        study = self._studies.get(body.get("study_id") or "")
        if study is None:
            raise ProlificError(400, {"study_id": ["No study with this id."]})
        csv_text = body.get("csv_bonuses")
        if not isinstance(csv_text, str) or not csv_text.strip():
            raise ProlificError(400, {"csv_bonuses": ["This field is required."]})
        # A line names a participant or one of their submissions in this study.
        participant_of = {}
        for submission in self._submissions_of(study.id):
            participant_of[submission.participant_id] = submission.participant_id
            participant_of[submission.id] = submission.participant_id
        lines, problems = [], []
        for number, row in enumerate(csv.reader(io.StringIO(csv_text.strip())), start=1):
            if len(row) != 2:
                problems.append(f"line {number}: expected 'participant_id,amount'.")
                continue
            named, amount_text = row[0].strip(), row[1].strip()
            participant_id = participant_of.get(named)
            if participant_id is None:
                problems.append(f"line {number}: {named} is neither a participant nor a "
                                f"submission of this study.")
                continue
            try:
                amount = Decimal(amount_text)
            except InvalidOperation:
                amount = None
            # The CSV carries major units (4.25 = 425 pence); more than 2 decimals is an error.
            if amount is None or amount <= 0 or amount.as_tuple().exponent < -2:
                problems.append(f"line {number}: {amount_text!r} is not a positive amount with "
                                f"at most two decimals (major units).")
                continue
            lines.append((participant_id, int(amount * 100)))
        if problems:
            raise ProlificError(400, {"csv_bonuses": problems})
        amount = sum(a for _, a in lines)
        record = BonusRecord(self._new_id(), study.id, lines, amount,
                             sum(self._fee(a) for _, a in lines), self.clock.now())
        self._bonus_records[record.id] = record
        return 201, self._bonus_json(record)

    def _bonus_json(self, record: BonusRecord) -> dict:
        return {"id": record.id, "study": record.study_id, "amount": record.amount,
                "fees": record.fees, "vat": 0, "total_amount": record.amount + record.fees,
                "csv_bonuses": "\n".join(f"{p},{Decimal(a) / 100:.2f}" for p, a in record.lines)}

    def _pay_bonus(self, record_id, _body, _request) -> tuple[int, dict]:
        record = self._get(self._bonus_records, record_id, "Bonus payment")
        total = record.amount + record.fees
        reserved = sum((r.amount + r.fees) * len(r.settling) for r in self._bonus_records.values())
        if total > self._balance - reserved:
            raise ProlificError(400, f"Insufficient funds: this bonus costs {total}, the "
                                     f"available balance is {self._balance - reserved}.")
        # Accepted now, paid "in the following minutes"; not idempotent, as in the real API:
        # every call pays again once it settles.
        record.times_paid += 1
        record.settling.append(self.clock.now() + self.bonus_settle_seconds)
        return 202, {}

    # -- command line -------------------------------------------------------------------------

    @classmethod
    def _add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--token", default=None,
                            help="the only API token accepted (default: any)")
        parser.add_argument("--balance", type=int, default=1_000_000,
                            help="workspace balance in minor units")
        parser.add_argument("--seed", type=int, default=None, help="seed for generated ids")
        parser.add_argument("--bonus-settle-seconds", type=float, default=BONUS_SETTLE_SECONDS,
                            help="how long after a pay call its bonus settles")

    @classmethod
    def _from_arguments(cls, args: argparse.Namespace) -> FakeProlificServer:
        return cls(host=args.host, port=args.port, api_token=args.token, balance=args.balance,
                   bonus_settle_seconds=args.bonus_settle_seconds, seed=args.seed)


def main(argv: Sequence[str] | None = None) -> None:
    FakeProlificServer.main(argv, description="Local fake of Prolific's REST API v1.")


if __name__ == "__main__":
    main()
