"""Amazon Mechanical Turk through boto3's ``mturk`` client.

Every write made in publishing, review and pay is safe to repeat: HITs carry a deterministic
UniqueRequestToken (a repeat answers HitAlreadyExists, which means "already done"), bonuses carry
the ledger row's token, and approving or rejecting an assignment that already has that state is
treated as done after checking it. ``_call`` sends such calls again after a lost answer; a call
that is not idempotent (CreateQualificationType) is sent once.
"""
from __future__ import annotations

import hashlib
import json
import logging
import xml.etree.ElementTree as ET
from decimal import Decimal
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from django.conf import settings
from django.core.files import File
from django.db import transaction

from annotation.selectors import slots_still_needed
from kernel.input_checks import HostileInput, parse_json
from kernel.retry import (
    ANSWER_LOST,
    RetryPolicy,
    TransientError,
    connection_failure,
    retry_after_seconds,
    transient_connection_failure,
)

from providers.base import (
    CrowdProvider,
    ProviderError,
    ProviderNotConfigured,
    ProviderRefused,
    PublishResult,
    RemoteSubmission,
    deterministic_token,
    money,
)

logger = logging.getLogger(__name__)

ENDPOINTS = {
    "sandbox": "https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    "production": "https://mturk-requester.us-east-1.amazonaws.com",
}
# Where MTurk tells the worker page to post the finished assignment (turkSubmitTo).
SUBMIT_HOSTS = {
    "sandbox": "https://workersandbox.mturk.com",
    "production": "https://www.mturk.com",
}
REGION = "us-east-1"
EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
ANSWERS_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
# System qualification type ids (the same in sandbox and production, except Masters).
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"
APPROVED_HITS_QUALIFICATION = "00000000000000000040"
LOCALE_QUALIFICATION = "00000000000000000071"
MASTERS_QUALIFICATION = {"sandbox": "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", "production": "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"}
BASE_FEE_RATE = Decimal("0.20")
LARGE_HIT_FEE_RATE = Decimal("0.40")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = Decimal("0.01")
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
ASSIGNMENT_DOES_NOT_EXIST = "AWS.MechanicalTurk.AssignmentDoesNotExist"
# Errors worth another try: throttling on any call (MTurk did nothing), a service fault on an
# idempotent one (it may have done the work before failing).
THROTTLING_CODES = {"ThrottlingException"}
TRANSIENT_CODES = {"ServiceFault", "ServiceUnavailable", "InternalFailure"}
# Operations that may be sent again after a lost answer: reads, and writes that set a state (a
# repeat finds it set; approve/reject check it). CreateHITType answers the same HIT type for the
# same fields.
IDEMPOTENT = {
    "get_account_balance", "get_assignment", "get_hit", "list_hits", "list_assignments_for_hit",
    "list_bonus_payments", "list_qualification_types", "create_hit_type", "update_expiration_for_hit",
    "create_worker_block", "associate_qualification_with_worker", "approve_assignment", "reject_assignment",
    "delete_hit",
}
# Idempotent when they carry a UniqueRequestToken (a repeat within 24 h is answered HitAlreadyExists,
# or "already processed" for a bonus, and nothing is done twice).
TOKEN_IDEMPOTENT = {"create_hit_with_hit_type", "send_bonus"}
NOT_IN_STATE = "This operation can be called with a status of"


def endpoint_url() -> str:
    return settings.MTURK_ENDPOINT_URL or ENDPOINTS[settings.MTURK_ENVIRONMENT]


def submit_hosts() -> set[str]:
    """Hosts the worker page may post to: the environment's MTurk site, and a configured endpoint."""
    hosts = {SUBMIT_HOSTS[settings.MTURK_ENVIRONMENT]}
    if settings.MTURK_ENDPOINT_URL:
        hosts.add(settings.MTURK_ENDPOINT_URL.rstrip("/"))
    return hosts


def task_url(round) -> str:
    return f"{settings.PROVIDERS_PUBLIC_BASE_URL.rstrip('/')}/work/mturk/{round.pk}/"


def external_question(*, url: str, frame_height: int) -> str:
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}"><ExternalURL>{escape(url)}</ExternalURL>'
        f"<FrameHeight>{frame_height}</FrameHeight></ExternalQuestion>"
    )


def parse_answers(answer_xml: str | None) -> dict:
    """QuestionFormAnswers XML → {question id: text, or list of selections}."""
    if not answer_xml:
        return {}
    root = ET.fromstring(answer_xml)
    answers = {}
    for answer in root.iter(f"{{{ANSWERS_NS}}}Answer"):
        question = answer.findtext(f"{{{ANSWERS_NS}}}QuestionIdentifier", default="")
        free_text = answer.find(f"{{{ANSWERS_NS}}}FreeText")
        if free_text is not None:
            answers[question] = free_text.text or ""
        else:
            answers[question] = [
                selection.text or "" for selection in answer.iter(f"{{{ANSWERS_NS}}}SelectionIdentifier")
            ]
    return answers


# The worker page posts its answers to MTurk too, as one JSON field, so a save that never reached
# us can be recovered by sync from what MTurk holds.
ANSWERS_FIELD = "crowdbench_answers"


def encode_answers(answers: dict) -> str:
    return json.dumps(answers, separators=(",", ":"), sort_keys=True, default=_file_reference)


def _file_reference(value: object) -> dict:
    """An uploaded file never goes to MTurk: its name and the SHA-256 of its bytes stand for it."""
    if not isinstance(value, File):
        raise TypeError(f"{type(value).__name__} cannot be handed to MTurk")
    value.seek(0)
    digest = hashlib.sha256(value.read()).hexdigest()
    value.seek(0)
    return {"file_name": value.name, "sha256": digest}


def decode_answers(answers: dict) -> dict:
    if ANSWERS_FIELD in answers:
        try:
            # A worker can hand MTurk any text: read it as request bodies are.
            decoded = parse_json(answers[ANSWERS_FIELD])
        except HostileInput:
            return answers
        return decoded if isinstance(decoded, dict) else answers
    return answers


def fee_rate_for(max_assignments: int) -> Decimal:
    return LARGE_HIT_FEE_RATE if max_assignments >= LARGE_HIT_ASSIGNMENTS else BASE_FEE_RATE


def requirements_from(options: dict, *, environment: str) -> list[dict]:
    """MTurk QualificationRequirements from the publish options (kept in the publication)."""
    requirements = []
    if options.get("min_approval_rate") is not None:
        requirements.append({
            "QualificationTypeId": APPROVAL_RATE_QUALIFICATION, "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [int(options["min_approval_rate"])], "ActionsGuarded": "DiscoverPreviewAndAccept",
        })
    if options.get("min_approved_hits") is not None:
        requirements.append({
            "QualificationTypeId": APPROVED_HITS_QUALIFICATION, "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [int(options["min_approved_hits"])], "ActionsGuarded": "DiscoverPreviewAndAccept",
        })
    if options.get("locales"):
        requirements.append({
            "QualificationTypeId": LOCALE_QUALIFICATION, "Comparator": "In",
            "LocaleValues": [{"Country": country} for country in options["locales"]],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        })
    if options.get("masters"):
        requirements.append({
            "QualificationTypeId": MASTERS_QUALIFICATION[environment], "Comparator": "Exists",
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        })
    if options.get("qualification_type_id"):
        requirements.append({
            "QualificationTypeId": options["qualification_type_id"], "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [int(options.get("qualification_min_score", 1))],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        })
    return requirements


class MTurkRefused(ProviderRefused):
    """MTurk answered no; ``turk_code`` and ``detail`` say why."""

    def __init__(self, operation: str, error: ClientError):
        self.turk_code = error.response.get("TurkErrorCode") or error.response.get("Error", {}).get("Code", "")
        self.detail = error.response.get("Error", {}).get("Message", str(error))
        super().__init__(f"MTurk {operation}: {self.detail}")


class MTurkProvider(CrowdProvider):
    name = "mturk"
    label = "Amazon Mechanical Turk"
    worker_urls = "providers.mturk.urls"
    rate_limited_views = {"task_request": ("task",)}  # the page a HIT opens
    bonus_fee_rate = BASE_FEE_RATE

    def __init__(self, *, endpoint: str | None = None, client=None, credentials: tuple[str, str] | None = None,
                 retry_pause: float | None = None, max_attempts: int | None = None, page_size: int = 100):
        self.endpoint = endpoint or endpoint_url()
        self._client = client
        # Only for the in-process fake of a dry run; real credentials come from boto3's own lookup.
        self._credentials = credentials
        self.retry_pause = settings.PROVIDERS_RETRY_PAUSE_SECONDS if retry_pause is None else retry_pause
        self.page_size = page_size
        self.retry_policy = RetryPolicy(attempts=max_attempts or settings.MTURK_MAX_ATTEMPTS, base=self.retry_pause)

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def client(self):
        if self._client is None:
            keys = {}
            if self._credentials:
                keys = {"aws_access_key_id": self._credentials[0], "aws_secret_access_key": self._credentials[1]}
            self._client = boto3.session.Session().client(
                "mturk", endpoint_url=self.endpoint, region_name=REGION,
                # One try per call here: _call's policy does the retrying, so retries never stack.
                config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
                **keys,
            )
        return self._client

    def _call(self, operation: str, *, idempotent: bool | None = None, **params):
        """One API call, retried by ``kernel.retry`` alone (botocore's retries are off).

        Throttling and a connection never made get more attempts with backoff on every call: MTurk
        did nothing. A 5xx or an answer lost on the way back (ConnectionClosedError, a read
        timeout) may follow a call that took effect, so only an idempotent call is sent again:
        ``idempotent`` says so at the call site, by default the operations of ``IDEMPOTENT`` and
        those carrying a UniqueRequestToken. Anything else is final.
        """
        if idempotent is None:
            idempotent = operation in IDEMPOTENT or (operation in TOKEN_IDEMPOTENT and "UniqueRequestToken" in params)

        def attempt():
            try:
                return getattr(self.client, operation)(**params)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
                if code in THROTTLING_CODES or (idempotent and (code in TRANSIENT_CODES or status >= 500)):
                    headers = error.response.get("ResponseMetadata", {}).get("HTTPHeaders")
                    raise TransientError(code or f"HTTP {status}", status=status,
                                         retry_after=retry_after_seconds(headers)) from None
                if code in TRANSIENT_CODES or status >= 500:
                    raise ProviderError(f"MTurk {operation}: {code or f'HTTP {status}'}; it may have taken "
                                        "effect, so it is not sent again") from None
                # Any other refusal is the provider's "no" (e.g. a reward below MTurk's minimum):
                # a ProviderRefused with MTurk's message, never a raw botocore error.
                raise MTurkRefused(operation, error) from None
            except NoCredentialsError:
                raise ProviderNotConfigured("MTurk is not set up on this server: no AWS credentials") from None
            except BotoCoreError as error:
                if transient_connection_failure(error, idempotent=idempotent):
                    raise TransientError(f"{type(error).__name__}: {error}") from None
                if connection_failure(error) == ANSWER_LOST:
                    raise ProviderError(f"MTurk {operation}: the answer was lost ({type(error).__name__}); "
                                        "it may have taken effect, so it is not sent again") from None
                raise ProviderError(f"MTurk {operation}: {type(error).__name__}: {error}") from None

        try:
            return self.retry_policy.call(attempt, describe=f"MTurk {operation}")
        except TransientError as error:
            # The call may or may not have taken effect: callers must not treat it as refused.
            raise ProviderError(f"MTurk {operation}: {error}, still failing after retries") from None

    @staticmethod
    def _turk_code(error: MTurkRefused) -> str:
        return error.turk_code

    @staticmethod
    def _message(error: MTurkRefused) -> str:
        return error.detail

    def _pages(self, operation: str, key: str, **params):
        token = None
        while True:
            page = self._call(operation, **params, **({"NextToken": token} if token else {}), MaxResults=self.page_size)
            yield from page.get(key, [])
            token = page.get("NextToken")
            if not token:
                return

    # -- publishing ------------------------------------------------------------------------------

    def task_url_parameters(self) -> list[str]:
        return ["assignmentId", "hitId", "workerId", "turkSubmitTo"]

    def fee_rate(self, *, round) -> Decimal:
        return fee_rate_for(round.workers_per_item)

    def reward_fee(self, *, reward: Decimal, rate: Decimal) -> Decimal:
        return max(MIN_FEE, money(reward * rate)) if reward > 0 else Decimal("0.00")

    def check_publish(self, *, round, options: dict) -> None:
        if round.currency != "USD":
            raise ProviderRefused(f"MTurk pays in USD, the round is in {round.currency}")

    def holds_tasks(self, *, publication) -> bool:
        # A HIT type alone is no task (MTurk answers the same type again for the same fields).
        return publication.hits.exists()

    def publish(self, *, round, publication) -> PublishResult:
        from .models import HIT

        options = publication.details.get("options", {})
        hit_type_id = self._call(
            "create_hit_type",
            Title=round.name[:128],
            Description=(options.get("description") or round.instructions or round.name)[:2000],
            Keywords=options.get("keywords", "image, research, benchmark")[:1000],
            Reward=f"{money(round.reward_per_task)}",
            AssignmentDurationInSeconds=round.time_limit_seconds,
            AutoApprovalDelayInSeconds=settings.MTURK_AUTO_APPROVAL_DELAY_SECONDS,
            QualificationRequirements=requirements_from(options, environment=settings.MTURK_ENVIRONMENT),
        )["HITTypeId"]
        publication.external_id = hit_type_id
        publication.save(update_fields=["external_id"])
        result = PublishResult(publication=publication)
        question = external_question(url=task_url(round), frame_height=settings.MTURK_FRAME_HEIGHT)
        # Only the work still needed: a HIT per item not yet complete, for the judgments it still lacks.
        needed = slots_still_needed(round=round)
        for item in round.items.filter(pk__in=list(needed)).order_by("position"):
            if HIT.objects.filter(publication=publication, item=item).exists():
                result.tasks_existing += 1
                continue
            token = deterministic_token(round=round, purpose=f"item:{item.pk}:hit")
            try:
                hit = self._call(
                    "create_hit_with_hit_type",
                    HITTypeId=hit_type_id, MaxAssignments=needed[item.pk],
                    LifetimeInSeconds=settings.MTURK_LIFETIME_SECONDS, Question=question,
                    RequesterAnnotation=token, UniqueRequestToken=token,
                )["HIT"]
                result.tasks_created += 1
            except MTurkRefused as error:
                if self._turk_code(error) != HIT_ALREADY_EXISTS:
                    raise ProviderRefused(f"MTurk refused a HIT for item {item.pk}: {self._message(error)}") from None
                # Created by an earlier attempt whose answer was lost: find it by its token.
                hit = self._find_hit(token=token)
                result.tasks_existing += 1
            with transaction.atomic():
                HIT.objects.create(
                    publication=publication, item=item, hit_id=hit["HITId"], hit_type_id=hit["HITTypeId"],
                    unique_request_token=token, max_assignments=hit["MaxAssignments"],
                )
        return result

    def _find_hit(self, *, token: str) -> dict:
        for hit in self._pages("list_hits", "HITs"):
            if hit.get("RequesterAnnotation") == token:
                return hit
        raise ProviderError(f"MTurk says a HIT with token {token} exists, but it is not listed")

    # -- submissions and review -------------------------------------------------------------------

    def list_submissions(self, *, publication) -> list[RemoteSubmission]:
        submissions = []
        for hit in publication.hits.all():
            for remote in self._pages("list_assignments_for_hit", "Assignments", HITId=hit.hit_id):
                submissions.append(RemoteSubmission(
                    provider_assignment_id=remote["AssignmentId"], worker_external_id=remote["WorkerId"],
                    provider_task_id=remote["HITId"], status=remote["AssignmentStatus"].lower(),
                    provider_status=remote["AssignmentStatus"],
                    answers=decode_answers(parse_answers(remote.get("Answer"))), submitted_at=remote.get("SubmitTime"),
                ))
        return submissions

    def confirm(self, *, assignment) -> bool | None:
        """GetAssignment: confirmed when MTurk holds the assignment as Submitted, Approved or
        Rejected on the same HIT by the same worker. MTurk shows an assignment only once the worker
        handed it in (after our save), so "does not exist" means not yet (None); a listing at sync
        settles it. Known under another HIT or worker: forged."""
        try:
            remote = self._call("get_assignment", AssignmentId=assignment.provider_assignment_id).get("Assignment")
        except MTurkRefused as error:
            if self._turk_code(error) == ASSIGNMENT_DOES_NOT_EXIST:
                return None
            raise ProviderRefused(f"MTurk GetAssignment: {self._message(error)}") from None
        if not isinstance(remote, dict):
            raise ProviderError("MTurk GetAssignment: the answer holds no assignment")
        if remote.get("HITId") != assignment.provider_task_id or remote.get("WorkerId") != assignment.worker.external_id:
            return False
        return remote.get("AssignmentStatus") in ("Submitted", "Approved", "Rejected")

    def check_arrival(self, *, worker, provider_assignment_id: str, provider_task_id: str) -> bool | None:
        """MTurk shows an accepted assignment only once it is handed in, so one arrival cannot be
        checked; GetHIT does count the HIT's accepted, not yet handed-in assignments
        (``NumberOfAssignmentsPending``). True while MTurk counts more of them than the other workers'
        open tasks on this HIT here; otherwise None (it cannot tell: held briefly, capped per round)."""
        from django.utils import timezone

        from annotation.models import Assignment

        hit = self._call("get_hit", HITId=provider_task_id).get("HIT") or {}
        pending = hit.get("NumberOfAssignmentsPending")
        if not isinstance(pending, int):
            return None
        others = (Assignment.objects.filter(provider_task_id=provider_task_id, worker__provider=self.name,
                                            status=Assignment.Status.ASSIGNED, expires_at__gt=timezone.now())
                  .exclude(provider_assignment_id=provider_assignment_id).count())
        return True if pending > others else None

    def forged_if_unlisted(self, *, assignment, now) -> bool:
        # Until its time limit the worker may still hand the assignment in at MTurk.
        return assignment.expires_at <= now

    def remote_status(self, *, assignment) -> str:
        return self._call("get_assignment", AssignmentId=assignment.provider_assignment_id)["Assignment"][
            "AssignmentStatus"
        ]

    def _review(self, *, operation: str, wanted: str, assignment, **params) -> None:
        try:
            self._call(operation, AssignmentId=assignment.provider_assignment_id, **params)
        except MTurkRefused as error:
            # Already in the wanted state (an earlier attempt, or auto-approval): done.
            if NOT_IN_STATE in self._message(error) and self.remote_status(assignment=assignment) == wanted:
                return
            raise ProviderRefused(
                f"MTurk {operation} {assignment.provider_assignment_id}: {self._message(error)}"
            ) from None

    def approve(self, *, assignment, feedback: str) -> None:
        params = {"RequesterFeedback": feedback[:1024]} if feedback else {}
        self._review(operation="approve_assignment", wanted="Approved", assignment=assignment, **params)

    def reject(self, *, assignment, feedback: str) -> None:
        self._review(operation="reject_assignment", wanted="Rejected", assignment=assignment,
                     RequesterFeedback=feedback[:1024])

    # -- money, blocks, qualifications -----------------------------------------------------------------

    def send_bonus(self, *, payment) -> None:
        try:
            self._call(
                "send_bonus", WorkerId=payment.worker.external_id, BonusAmount=f"{money(payment.amount)}",
                AssignmentId=payment.assignment.provider_assignment_id, Reason=payment.reason[:1024],
                UniqueRequestToken=payment.token,
            )
        except MTurkRefused as error:
            if "idempotency token" in self._message(error) and "already been processed" in self._message(error):
                return  # an earlier attempt paid it
            raise ProviderRefused(f"MTurk SendBonus: {self._message(error)}") from None

    def block(self, *, worker, reason: str) -> None:
        self._call("create_worker_block", WorkerId=worker.external_id, Reason=reason[:1024])

    def qualify(self, *, worker, qualification: str, value: int = 1) -> None:
        self._call("associate_qualification_with_worker", QualificationTypeId=qualification,
                   WorkerId=worker.external_id, IntegerValue=value, SendNotification=False)

    def expire(self, *, publication) -> None:
        from datetime import datetime, timezone

        self._set_expiration(publication, datetime(2015, 1, 1, tzinfo=timezone.utc))  # the past: at once

    def pause(self, *, publication) -> None:
        """MTurk has no pause: the HITs expire now (accepted assignments may still be submitted)."""
        self.expire(publication=publication)

    def resume(self, *, publication, round) -> None:
        self.extend(publication=publication, round=round)

    def extend(self, *, publication, round) -> None:
        """A fresh lifetime for every HIT of the publication, counted from now (an expired HIT is
        listed again)."""
        from datetime import datetime, timedelta, timezone

        lifetime = timedelta(seconds=settings.MTURK_LIFETIME_SECONDS)
        self._set_expiration(publication, datetime.now(timezone.utc) + lifetime)

    def _set_expiration(self, publication, expire_at) -> None:
        for hit in publication.hits.all():
            self._call("update_expiration_for_hit", HITId=hit.hit_id, ExpireAt=expire_at)

    def delete(self, *, publication) -> list[str]:
        """Delete reviewed HITs; returns the ones MTurk would not delete yet (work awaiting review)."""
        kept = []
        for hit in publication.hits.all():
            try:
                self._call("delete_hit", HITId=hit.hit_id)
            except MTurkRefused:
                kept.append(hit.hit_id)
        return kept

    def balance(self) -> Decimal | None:
        return Decimal(self._call("get_account_balance")["AvailableBalance"])

    @classmethod
    def rehearsal(cls, *, seed, currency):
        from .rehearsal import MTurkRehearsal

        return MTurkRehearsal(provider_class=cls, seed=seed)
