"""The one owner of an instance's pipeline status (``Instance.status`` and ``discard_reason``).

Every change of status goes through ``create_instance`` (the initial status) or ``move`` (one
transition of ``TRANSITIONS``); a transition the diagram in docs/pipeline.md does not draw is
refused with ``StatusConflict`` (HTTP 409). Task types, LLM steps and the import return data and
call these; nothing else assigns the field.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from crowdbench.errors import ServiceError

from .models import Instance

S = Instance.Status


class StatusConflict(ServiceError):
    """The instance is not in a status this step may move it from."""

    status_code = 409


@dataclass(frozen=True)
class Transition:
    event: str
    sources: frozenset[str]
    target: str
    meaning: str


# The state diagram, one row per edge (docs/pipeline.md draws the same table).
TRANSITIONS: dict[str, Transition] = {
    t.event: t
    for t in (
        Transition("captions_chosen", frozenset({S.AWAITING_CAPTION}), S.AWAITING_REFERENCE,
                   "a caption item completed; its chosen captions became current"),
        Transition("candidate_written", frozenset({S.AWAITING_REFERENCE}), S.AWAITING_VERIFICATION,
                   "the LLM wrote a reference candidate"),
        Transition("verified", frozenset({S.AWAITING_VERIFICATION, S.DISCARDED}), S.VERIFIED,
                   "a verification verdict of correct (or a revised one after a rejected judgment)"),
        Transition("discarded", frozenset({S.AWAITING_VERIFICATION, S.VERIFIED, S.DISCARDED}), S.DISCARDED,
                   "a verification verdict of incorrect, harmful or no majority (or a revised one)"),
        Transition("verdict_withdrawn", frozenset({S.VERIFIED, S.DISCARDED}), S.AWAITING_VERIFICATION,
                   "a judgment behind the verdict was rejected and the item is open again"),
        Transition("recaption", frozenset({S.DISCARDED}), S.AWAITING_CAPTION,
                   "a discarded instance goes to a new caption round"),
        Transition("regenerate", frozenset({S.DISCARDED}), S.AWAITING_REFERENCE,
                   "a discarded instance gets a new reference candidate"),
    )
}

# Where an instance may start: crowd-written and demo instances wait for captions; the import and
# the demo also bring instances that already have a candidate or a final verdict.
INITIAL_STATUSES = frozenset({S.AWAITING_CAPTION, S.AWAITING_REFERENCE, S.AWAITING_VERIFICATION,
                              S.VERIFIED, S.DISCARDED})


def _check_reason(status: str, reason: str) -> None:
    fits = bool(reason) and reason in Instance.DiscardReason.values if status == S.DISCARDED else not reason
    if not fits:
        raise StatusConflict(
            f"a discarded instance states its reason and only a discarded one does (status {status}, reason {reason!r})"
        )


def new_instance(*, status: str, discard_reason: str = "", **fields) -> Instance:
    """An unsaved instance in its initial status (for ``bulk_create`` of many at once)."""
    if status not in INITIAL_STATUSES:
        raise StatusConflict(f"an instance cannot start as {status!r}")
    _check_reason(status, discard_reason)
    return Instance(status=status, discard_reason=discard_reason, **fields)


def create_instance(*, status: str, discard_reason: str = "", clean: bool = False, **fields) -> Instance:
    """A new instance in its initial status; ``clean`` runs ``full_clean`` before saving."""
    instance = new_instance(status=status, discard_reason=discard_reason, **fields)
    if clean:
        instance.full_clean()
    instance.save()
    return instance


def allowed_events(status: str) -> list[str]:
    return [t.event for t in TRANSITIONS.values() if status in t.sources]


@transaction.atomic
def move(instance: Instance, event: str, *, reason: str = "") -> Instance:
    """Apply one transition to ``instance`` (locked and re-read), or refuse it with ``StatusConflict``.

    ``reason`` is the discard reason, required for ``discarded`` and refused otherwise.
    """
    try:
        transition = TRANSITIONS[event]
    except KeyError:
        raise StatusConflict(f"unknown instance status event {event!r}; known: {', '.join(TRANSITIONS)}") from None
    current = Instance.objects.select_for_update().values_list("status", flat=True).get(pk=instance.pk)
    if current not in transition.sources:
        raise StatusConflict(
            f"instance {instance.pk} is {current}; {event} only applies to "
            f"{', '.join(sorted(transition.sources))}"
        )
    _check_reason(transition.target, reason)
    instance.status = transition.target
    instance.discard_reason = reason
    instance.full_clean(validate_unique=False, validate_constraints=False)
    instance.save(update_fields=["status", "discard_reason", "updated_at"])
    return instance


def captions_chosen(instance: Instance) -> Instance:
    return move(instance, "captions_chosen")


def candidate_written(instance: Instance) -> Instance:
    return move(instance, "candidate_written")


def verified(instance: Instance) -> Instance:
    return move(instance, "verified")


def discarded(instance: Instance, *, reason: str) -> Instance:
    return move(instance, "discarded", reason=reason)


def verdict_withdrawn(instance: Instance) -> Instance:
    return move(instance, "verdict_withdrawn")


def recaption(instance: Instance) -> Instance:
    return move(instance, "recaption")


def regenerate(instance: Instance) -> Instance:
    return move(instance, "regenerate")
