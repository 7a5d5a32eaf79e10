"""The one owner of an instance's pipeline status (``Instance.status`` and ``discard_reason``).

Every change of status goes through ``create_instance`` (the initial status) or ``move`` (one
transition of ``INSTANCE_STATUS``, declared beside the model); a transition the diagram in
docs/pipeline.md does not draw is refused with ``StatusConflict`` (HTTP 409). Task types, LLM steps
and the import return data and call these; nothing else assigns the field.
"""
from __future__ import annotations

from djangokit import transitions

from .models import INSTANCE_STATUS, Instance, StatusConflict

S = Instance.Status


def _check_reason(status: str, reason: str) -> None:
    fits = bool(reason) and reason in Instance.DiscardReason.values if status == S.DISCARDED else not reason
    if not fits:
        raise StatusConflict(
            f"a discarded instance states its reason and only a discarded one does (status {status}, reason {reason!r})"
        )


def new_instance(*, status: str, discard_reason: str = "", **fields) -> Instance:
    """An unsaved instance in its initial status (for ``bulk_create`` of many at once)."""
    INSTANCE_STATUS.check_initial(status)
    _check_reason(status, discard_reason)
    return Instance(status=status, discard_reason=discard_reason, **fields)


def create_instance(*, status: str, discard_reason: str = "", clean: bool = False, **fields) -> Instance:
    """A new instance in its initial status; ``clean`` runs ``full_clean`` before saving."""
    instance = new_instance(status=status, discard_reason=discard_reason, **fields)
    if clean:
        instance.full_clean()
    instance.save()
    return instance


def move(instance: Instance, event: str, *, reason: str = "") -> Instance:
    """Apply one transition to the stored instance in one conditional update, or refuse it with
    ``StatusConflict`` (nothing written). ``reason`` is the discard reason, required for
    ``discarded`` and refused otherwise."""
    transition = INSTANCE_STATUS.transition(event)
    _check_reason(transition.target, reason)
    return transitions.move(instance, INSTANCE_STATUS, event, discard_reason=reason)


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
