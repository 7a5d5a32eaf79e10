"""Prolific through its REST API v1 (httpx). Money is in minor units (pence, cents) on the wire.

Only fields Prolific's API reference documents are read. The workspace comes from
``PROLIFIC_WORKSPACE_ID`` or, when unset, from the workspaces endpoint (exactly one workspace).

Study creation and bonus payment are not idempotent on Prolific, so neither is sent again after
a lost answer (``_request``'s ``idempotent``); reads, submission and study transitions are. A study is found again by its
deterministic internal name (across every page of the study list) before a new one is created. A
bonus record's id is stored in the ledger before the pay call, which is sent once; Prolific pays
"in the following minutes", so the row stays possibly paid until the submission's
``bonus_payments`` show it, and a rerun never pays it again meanwhile.
"""
from __future__ import annotations

import logging
import math
from dataclasses import replace
from urllib.parse import urlencode
from decimal import ROUND_HALF_UP, Decimal

import httpx
from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext as _

from annotation.selectors import slots_still_needed
from kernel.retry import (
    NOT_SENT,
    RetryPolicy,
    TransientError,
    connection_failure,
    retry_after_seconds,
    transient_connection_failure,
)

from ..base import (
    CrowdProvider,
    ProviderError,
    ProviderNotConfigured,
    ProviderRefused,
    PublishResult,
    RemoteSubmission,
    deterministic_token,
    money,
    tasks_per_session,
)

logger = logging.getLogger(__name__)

COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
STATUSES = {"ACTIVE": "active", "AWAITING REVIEW": "submitted", "APPROVED": "approved", "REJECTED": "rejected"}
# A submission in these states is the participant's own work in the study: Prolific creates it
# (ACTIVE) when the participant starts, before they reach our page. RETURNED / TIMED-OUT work was
# given up there and is not confirmed.
CONFIRMING_STATUSES = set(STATUSES)
MIN_REJECTION_MESSAGE = 100
# The study statuses in which a study transition has been made (a repeat of it is refused there).
STUDY_TRANSITIONS_DONE = {
    "PUBLISH": {"ACTIVE", "SCHEDULED", "PAUSED", "AWAITING REVIEW", "COMPLETED"},
    "PAUSE": {"PAUSED"},
    "START": {"ACTIVE"},
    "STOP": {"AWAITING REVIEW", "COMPLETED"},
}
RETRYABLE = {429, 500, 502, 503, 504}
# Methods that may be sent again after a lost answer (a POST only when its call site says so).
IDEMPOTENT_METHODS = {"GET", "HEAD", "PUT", "PATCH", "DELETE"}


class NotFound(ProviderRefused):
    """Prolific has no such object (HTTP 404)."""


class NotSent(ProviderRefused):
    """The request never left (no connection): nothing happened at Prolific, so it may be sent again."""


def to_minor(amount: Decimal) -> int:
    return int((Decimal(amount) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def from_minor(amount: int) -> Decimal:
    return money(Decimal(amount) / 100)


def task_url(round) -> str:
    return (
        f"{settings.PROVIDERS_PUBLIC_BASE_URL.rstrip('/')}/work/prolific/{round.pk}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def unconfirmed_message() -> str:
    """What a participant whose study session Prolific does not confirm sees instead of the completion code."""
    return _("Your answers were saved, but Prolific does not show this study session as yours, so no "
             "completion code can be given. If you took part through Prolific, please write to the "
             "researcher there.")


def completion_code(round) -> str:
    return deterministic_token(round=round, purpose="prolific:completion-code")[:8].upper()


# Publish options naming Prolific's language filters (their choice ids come from Prolific's
# filters list, GET /api/v1/filters/) and the filter each sends.
LANGUAGE_FILTERS = {"first_language_ids": "first-language", "fluent_language_ids": "fluent-languages"}


def eligibility_filters(options: dict) -> list[dict]:
    """The study's ``filters``: language (select filters, choice ids as strings) and a minimum
    approval rate (a range filter, percent)."""
    filters = []
    for option, filter_id in LANGUAGE_FILTERS.items():
        if options.get(option):
            filters.append({"filter_id": filter_id, "selected_values": [str(v) for v in options[option]]})
    if options.get("min_approval_rate") is not None:
        filters.append({"filter_id": "approval_rate",
                        "selected_range": {"lower": int(options["min_approval_rate"]), "upper": 100}})
    return filters



def error_detail(response: httpx.Response) -> str:
    """Prolific's error answer in words: ``{"error": {"detail": ...}}`` where ``detail`` is a
    sentence, a list of them or, for a validation error, ``{field: [messages]}``."""
    try:
        body = response.json() if response.content else {}
    except ValueError:
        return response.reason_phrase  # not JSON (a proxy's page, say): its text is no one's message
    error = body.get("error", {}) if isinstance(body, dict) else {}
    detail = error.get("detail", "") if isinstance(error, dict) else error

    def words(value) -> str:
        if isinstance(value, dict):
            return "; ".join(f"{key}: {words(inner)}" for key, inner in value.items())
        if isinstance(value, list):
            return " ".join(words(inner) for inner in value)
        return str(value)

    return words(detail)[:500]

class ProlificProvider(CrowdProvider):
    name = "prolific"
    label = "Prolific"
    worker_urls = "providers.prolific.urls"
    rate_limited_views = {"task_request": ("task",)}  # the page the study link opens
    bonus_resend_is_safe = False
    bonus_settles_later = True

    def __init__(self, *, base_url: str | None = None, token: str | None = None, retry_pause: float | None = None,
                 max_attempts: int | None = None, transport: httpx.BaseTransport | None = None,
                 page_size: int = 200, workspace_id: str | None = None, project_id: str | None = None):
        self.base_url = (base_url or settings.PROLIFIC_API_URL).rstrip("/") + "/"
        self._token = token if token is not None else settings.PROLIFIC_API_TOKEN
        self.retry_pause = settings.PROVIDERS_RETRY_PAUSE_SECONDS if retry_pause is None else retry_pause
        self.retry_policy = RetryPolicy(attempts=max_attempts or settings.PROLIFIC_MAX_ATTEMPTS, base=self.retry_pause)
        self._transport = transport
        self.page_size = page_size
        self._client: httpx.Client | None = None
        self.bonus_fee_rate = Decimal(settings.PROLIFIC_FEE_RATE)
        self._workspace_id = workspace_id or settings.PROLIFIC_WORKSPACE_ID or None
        self.project_id = project_id or settings.PROLIFIC_PROJECT_ID or None
        # How long after a pay call a researcher may resend a row Prolific still does not show.
        self.settle_window_seconds = settings.PROLIFIC_BONUS_SETTLE_WINDOW_SECONDS

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            if not self._token:
                raise ProviderNotConfigured("Prolific is not set up on this server: PROLIFIC_API_TOKEN is not set")
            self._client = httpx.Client(
                base_url=self.base_url, timeout=30, transport=self._transport,
                headers={"Authorization": f"Token {self._token}"},
            )
        return self._client

    def _request(self, method: str, path: str, *, json: dict | None = None, params: dict | None = None,
                 idempotent: bool | None = None) -> dict:
        """One call. A connection never made and a 429 (Prolific did nothing) get more attempts on
        every call. A 5xx or an answer lost on the way back may follow a call that took effect,
        so only an ``idempotent`` call is sent again: GETs, PUT/PATCH that set a state, and POSTs
        declared so at the call site (by default a POST is not)."""
        url = path.lstrip("/") if not path.startswith("http") else path
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS

        def attempt() -> httpx.Response:
            try:
                response = self.client.request(method, url, json=json, params=params)
            except httpx.TransportError as error:
                if transient_connection_failure(error, idempotent=idempotent):
                    # Kept as the cause: a connection never made means the request was never sent.
                    raise TransientError(type(error).__name__) from error
                raise
            if response.status_code == 429 or (idempotent and response.status_code in RETRYABLE):
                raise TransientError(f"HTTP {response.status_code}", status=response.status_code,
                                     retry_after=retry_after_seconds(response.headers))
            return response

        try:
            response = self.retry_policy.call(attempt, describe=f"Prolific {method} {path}")
        except TransientError as error:
            if connection_failure(error.__cause__) == NOT_SENT:
                # No connection, so the request was never sent: nothing happened at Prolific.
                raise NotSent(f"Prolific {method} {path}: {error}") from None
            raise ProviderError(f"Prolific {method} {path}: {error}") from None
        except httpx.TransportError as error:
            # Sent, and the answer lost: a call that is not idempotent may have taken effect.
            raise ProviderError(f"Prolific {method} {path}: {type(error).__name__}; the answer was lost") from None
        if response.status_code >= 400:
            detail = error_detail(response)
            if response.status_code in RETRYABLE:
                raise ProviderError(f"Prolific {method} {path}: HTTP {response.status_code} {detail}")
            refusal = NotFound if response.status_code == 404 else ProviderRefused
            raise refusal(f"Prolific {method} {path}: HTTP {response.status_code} {detail}")
        return response.json() if response.content else {}

    def _pages(self, path: str, params: dict | None = None):
        """Every result of a listing, following ``_links.next.href`` to the last page."""
        url, params = path, {"page_size": self.page_size, **(params or {})}
        while url:
            page = self._request("GET", url, params=params)
            yield from page.get("results", [])
            url = ((page.get("_links") or {}).get("next") or {}).get("href")
            params = None  # the next link carries its own query

    # -- workspace ---------------------------------------------------------------------------------

    def workspace_id(self) -> str:
        """The configured workspace, or the account's only one (from the workspaces endpoint)."""
        if self._workspace_id is None:
            workspaces = list(self._pages("workspaces/"))
            if len(workspaces) != 1:
                raise ProviderRefused(
                    f"the Prolific account has {len(workspaces)} workspaces; set PROLIFIC_WORKSPACE_ID to the one "
                    "to use" if workspaces else "the Prolific account has no workspace"
                )
            self._workspace_id = workspaces[0]["id"]
        return self._workspace_id

    def _workspace_balance(self) -> dict:
        return self._request("GET", f"workspaces/{self.workspace_id()}/balance/")

    # -- publishing -------------------------------------------------------------------------------

    def task_url_parameters(self) -> list[str]:
        return ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]

    def fee_rate(self, *, round) -> Decimal:
        return Decimal(settings.PROLIFIC_FEE_RATE)

    def estimated_minutes(self, *, round, options: dict) -> int:
        if options.get("estimated_minutes"):
            return int(options["estimated_minutes"])
        # The time at which the reward pays the round's target wage.
        if round.target_hourly_wage:
            return max(1, math.floor(round.reward_per_task / round.target_hourly_wage * 60))
        return max(1, round.time_limit_seconds // 120)

    def check_publish(self, *, round, options: dict) -> None:
        # Amounts go over the wire as numbers in the workspace's currency: it must be the round's.
        currency = self._workspace_balance().get("currency_code")
        if currency and currency != round.currency:
            raise ProviderRefused(f"the Prolific workspace pays in {currency}, the round is in {round.currency}")

    def publish(self, *, round, publication) -> PublishResult:
        options = publication.details.get("options", {})
        internal_name = f"crowdbench-{deterministic_token(round=round, purpose='prolific:study')[:24]}"
        code = completion_code(round)
        result = PublishResult(publication=publication)
        study = None
        if publication.external_id:
            study = self._request("GET", f"studies/{publication.external_id}/")
        else:
            # A study created by an earlier attempt whose answer was lost is found by its name.
            study = next((s for s in self._pages("studies/") if s.get("internal_name") == internal_name), None)
        if study is None:
            minutes = self.estimated_minutes(round=round, options=options)
            project = {"project": self.project_id} if self.project_id else {}
            # Not idempotent: after a lost answer the rerun finds the study by its internal name.
            study = self._request("POST", "studies/", json={**project,
                "name": round.name,
                "internal_name": internal_name,
                "description": options.get("description") or round.instructions or round.name,
                "external_study_url": task_url(round),
                "prolific_id_option": "url_parameters",
                "completion_codes": [{"code": code, "code_type": "COMPLETED",
                                      "actions": [{"action": "MANUALLY_REVIEW"}]}],
                # Only the work still needed: judgments already in are not offered again.
                "total_available_places": sum(slots_still_needed(round=round).values()),
                "estimated_completion_time": minutes,
                "maximum_allowed_time": max(minutes, math.ceil(round.time_limit_seconds / 60)),
                "reward": to_minor(round.reward_per_task),
                "device_compatibility": options.get("devices", ["desktop"]),
                **({"filters": eligibility_filters(options)} if eligibility_filters(options) else {}),
            })
            result.tasks_created = 1
        else:
            result.tasks_existing = 1
        publication.external_id = study["id"]
        publication.details = {**publication.details, "completion_code": code}
        publication.save(update_fields=["external_id", "details"])
        if study["status"] == "UNPUBLISHED":
            self._send_study_transition(study["id"], action="PUBLISH")
        return result

    # -- submissions and review -----------------------------------------------------------------

    def list_submissions(self, *, publication) -> list[RemoteSubmission]:
        return [
            RemoteSubmission(
                provider_assignment_id=remote["id"], worker_external_id=remote["participant_id"],
                provider_task_id=remote["study_id"], status=STATUSES.get(remote["status"], "other"),
                provider_status=remote["status"],
            )
            for remote in self._pages(f"studies/{publication.external_id}/submissions/")
        ]

    def confirm(self, *, assignment) -> bool | None:
        """GET the submission by its id (the SESSION_ID): confirmed when it is this participant's
        submission in this study and not returned or timed out; False when Prolific has no such
        submission, or it belongs to another participant or study."""
        try:
            remote = self._request("GET", f"submissions/{assignment.provider_assignment_id}/")
        except NotFound:
            return False
        if (remote.get("participant_id") != assignment.worker.external_id
                or remote.get("study_id") != assignment.provider_task_id):
            return False
        return True if remote.get("status") in CONFIRMING_STATUSES else None

    def check_arrival(self, *, worker, provider_assignment_id: str, provider_task_id: str) -> bool | None:
        """GET the submission by its id (the SESSION_ID): Prolific creates it, ``ACTIVE``, when the
        participant starts the study. True when it is this participant's, in this study, and active;
        False when Prolific has no such submission, it is another participant's or study's, or it is
        no longer active (returned, timed out or already handed in)."""
        try:
            remote = self._request("GET", f"submissions/{provider_assignment_id}/")
        except NotFound:
            return False
        return (remote.get("participant_id") == worker.external_id and remote.get("study_id") == provider_task_id
                and remote.get("status") == "ACTIVE")

    def screens_language(self, *, round) -> bool:
        """Only a study published with a first- or fluent-language filter screens language."""
        from ..models import Publication

        publication = Publication.objects.filter(round=round, provider=self.name).first()
        options = (publication.details.get("options") or {}) if publication else {}
        return any(options.get(key) for key in LANGUAGE_FILTERS)

    def after_submit(self, *, assignment) -> dict:
        """The participant's next task in the same study session while the session holds fewer than the
        round's ``tasks_per_participant`` (the entry page gives it, or sends them on when none is left);
        else Prolific's completion URL."""
        from annotation.models import Assignment, CollectionRound

        from ..models import Publication

        round = assignment.round
        if assignment.confirmation != Assignment.Confirmation.CONFIRMED:
            # The completion code is Prolific's proof of work: only for a session Prolific confirmed.
            return {"message": unconfirmed_message()}
        done = Assignment.objects.filter(round=round, worker=assignment.worker, status=Assignment.Status.SUBMITTED,
                                         provider_assignment_id=assignment.provider_assignment_id).count()
        if done < tasks_per_session(round) and round.status == CollectionRound.Status.OPEN:
            query = urlencode({"PROLIFIC_PID": assignment.worker.external_id, "STUDY_ID": assignment.provider_task_id,
                               "SESSION_ID": assignment.provider_assignment_id})
            return {"redirect_url": f"{reverse('providers:prolific:task', args=[round.pk])}?{query}", "next_task": True}
        publication = Publication.objects.get(round=assignment.round, provider=self.name)
        return {"redirect_url": COMPLETE_URL.format(code=publication.details["completion_code"])}

    def estimate_cost(self, *, round, expected_bonuses: Decimal = Decimal("0"), items: int | None = None,
                      tasks: int | None = None):
        """With ``tasks_per_participant`` above 1, at the limit each participant's first task is paid by the
        study reward and the others as bonuses (with the bonus fee)."""
        estimate = super().estimate_cost(round=round, expected_bonuses=expected_bonuses, items=items, tasks=tasks)
        places = math.ceil(estimate.tasks / tasks_per_session(round))
        extra = estimate.tasks - places
        if not extra:
            return estimate
        bonuses = money(Decimal(expected_bonuses) + round.reward_per_task * extra)
        return replace(
            estimate, rewards=money(round.reward_per_task * places),
            fees=money(self.reward_fee(reward=round.reward_per_task, rate=self.fee_rate(round=round)) * places),
            expected_bonuses=bonuses, bonus_fees=money(bonuses * self.bonus_fee_rate),
        )

    def approve(self, *, assignment, feedback: str) -> None:
        # Prolific treats a repeated transition as a no-op, so retrying is safe.
        self._request("POST", f"submissions/{assignment.provider_assignment_id}/transition/",
                      json={"action": "APPROVE"}, idempotent=True)

    def reject(self, *, assignment, feedback: str, category: str = "OTHER") -> None:
        if len(feedback.strip()) < MIN_REJECTION_MESSAGE:
            raise ProviderRefused(
                f"Prolific needs a rejection message of at least {MIN_REJECTION_MESSAGE} characters"
            )
        self._request("POST", f"submissions/{assignment.provider_assignment_id}/transition/",
                      json={"action": "REJECT", "message": feedback, "rejection_category": category},
                      idempotent=True)

    # -- money -------------------------------------------------------------------------------------

    def send_bonus(self, *, payment) -> None:
        from ..models import BonusPayment

        if not payment.provider_record_id:
            # Creating a record pays nothing, so a duplicate record from a lost answer costs nothing:
            # safe to send again, though Prolific makes a second record.
            record = self._request("POST", "submissions/bonus-payments/", idempotent=True, json={
                "study_id": payment.assignment.provider_task_id,
                "csv_bonuses": f"{payment.assignment.provider_assignment_id},{money(payment.amount)}",
            })
            payment.provider_record_id = record["id"]
            BonusPayment.objects.filter(pk=payment.pk).update(provider_record_id=record["id"])
        # Not idempotent (each pay call pays): sent once, never again after a lost answer.
        self._request("POST", f"bulk-bonus-payments/{payment.provider_record_id}/pay/")

    def bonus_was_paid(self, *, payment) -> bool | None:
        """True once the submission's ``bonus_payments`` show the payment; None otherwise: it may still
        be settling, or the pay call's answer was lost, and Prolific offers no way to tell those apart,
        however long ago the call was. Only a researcher resends such a row (``pay_round
        --resend-unsettled``)."""
        from ..models import BonusPayment

        if not payment.provider_record_id:
            return False  # the pay call needs a record; without one nothing was paid
        submission = self._request("GET", f"submissions/{payment.assignment.provider_assignment_id}/")
        amount = to_minor(payment.amount)
        paid_there = sum(1 for value in submission.get("bonus_payments", []) if value == amount)
        same = BonusPayment.objects.filter(assignment=payment.assignment, amount=payment.amount).exclude(pk=payment.pk)
        if same.filter(status=BonusPayment.Status.SENDING).exists():
            return None  # two uncertain rows of one amount cannot be told apart
        if paid_there > same.filter(status=BonusPayment.Status.PAID).count():
            return True
        return None

    def block(self, *, worker, reason: str) -> None:
        # Prolific excludes participants through participant groups on its site; the local block
        # (set by the service) keeps them from taking our tasks.
        logger.info("Prolific participant %s blocked locally", worker.external_id)

    def pause(self, *, publication) -> None:
        self._transition_study(publication, action="PAUSE", only_from="ACTIVE")

    def resume(self, *, publication, round) -> None:
        self._transition_study(publication, action="START", only_from="PAUSED")

    def _transition_study(self, publication, *, action: str, only_from: str) -> None:
        """One study transition, sent only when the study is in the state it starts from (a rerun, or
        a study that finished meanwhile, changes nothing)."""
        study = self._request("GET", f"studies/{publication.external_id}/")
        if study["status"] == only_from:
            self._send_study_transition(publication.external_id, action=action)

    def _send_study_transition(self, study_id: str, *, action: str) -> None:
        """A study transition sets a state, so it is sent again after a lost answer; Prolific then
        refuses the repeat (the study is no longer in the state it starts from), and a study found
        past that state counts as done."""
        try:
            self._request("POST", f"studies/{study_id}/transition/", json={"action": action}, idempotent=True)
        except NotFound:
            raise
        except ProviderRefused:
            status = self._request("GET", f"studies/{study_id}/").get("status")
            if status not in STUDY_TRANSITIONS_DONE[action]:
                raise

    def expire(self, *, publication) -> None:
        study = self._request("GET", f"studies/{publication.external_id}/")
        if study["status"] in ("ACTIVE", "PAUSED"):
            self._send_study_transition(publication.external_id, action="STOP")

    def balance(self) -> Decimal | None:
        return from_minor(self._workspace_balance()["available_balance"])

    @classmethod
    def rehearsal(cls, *, seed, currency):
        from .rehearsal import ProlificRehearsal

        return ProlificRehearsal(provider_class=cls, seed=seed, currency=currency)
