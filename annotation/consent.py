"""Study information and consent per round: the researcher's text, and each worker's decision.

The one owner of ``CollectionRound.consent_text`` edits and of ``ConsentDecision`` rows. A round with
consent text hands out no task (``services.engine.request_assignment``) to a worker whose acceptance of the
current text is not recorded; a changed text is asked again.
"""
from __future__ import annotations

import hashlib

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from djangokit.text_input import clean_text
from kernel.errors import ServiceError

from .models import CollectionRound, ConsentDecision, Worker

MAX_CONSENT_CHARS = 20000


class InvalidConsentText(ServiceError):
    """The study information was refused."""

    status_code = 400


def text_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def consent_required(*, round: CollectionRound) -> bool:
    return bool(round.consent_text.strip())


_UNREAD = object()


def has_accepted(*, round: CollectionRound, worker: Worker, accepted_sha256=_UNREAD) -> bool:
    """Whether the worker accepted the round's current study information (True when it has none).
    ``accepted_sha256``: the hash of the text of the worker's accepting decision in this round (None for
    none), when the caller read it already (``eligibility.read_round_for_worker``)."""
    if not consent_required(round=round):
        return True
    if accepted_sha256 is not _UNREAD:
        return accepted_sha256 == text_hash(round.consent_text)
    return ConsentDecision.objects.filter(
        round=round, worker=worker, accepted=True, text_sha256=text_hash(round.consent_text)
    ).exists()


def decision_of(*, round: CollectionRound, worker: Worker) -> ConsentDecision | None:
    """The worker's decision on the round's current text, if any."""
    return ConsentDecision.objects.filter(
        round=round, worker=worker, text_sha256=text_hash(round.consent_text)
    ).first()


@transaction.atomic
def record_decision(*, round: CollectionRound, worker: Worker, accepted: bool) -> ConsentDecision:
    """Record that the worker accepted (or refused) the round's current study information, now.

    The decision replaces an earlier one of this worker in this round (a worker who refused may
    change their mind; a changed text needs a new answer)."""
    round = CollectionRound.objects.get(pk=round.pk)
    decision, _created = ConsentDecision.objects.update_or_create(
        round=round, worker=worker,
        defaults={"accepted": bool(accepted), "text_sha256": text_hash(round.consent_text),
                  "decided_at": timezone.now()},
    )
    return decision


def clean_consent_text(value) -> str:
    try:
        return clean_text(value, label=_("The study information"), max_length=MAX_CONSENT_CHARS, required=False)
    except ValidationError as error:
        raise InvalidConsentText(" ".join(error.messages)) from None


@transaction.atomic
def set_consent_text(*, round: CollectionRound, text: str) -> CollectionRound:
    """Set (or clear, with blank text) the round's study information; workers who accepted another
    text are asked again."""
    text = clean_consent_text(text)
    locked = CollectionRound.objects.select_for_update().get(pk=round.pk)
    locked.consent_text = text
    locked.save(update_fields=["consent_text"])
    return locked
