"""The refusals of crowd work: each maps to the HTTP status and worker-readable message to answer with.

Every module of crowd work raises these (the services, the eligibility rules, the worker pages'
selectors), so they sit below all of them.
"""
from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist, ValidationError

from kernel.errors import ServiceError
from kernel.state_machine import TransitionRefused


class CrowdWorkError(ServiceError):
    """A refused request, with the HTTP status and the worker-readable message to answer with."""

    status_code = 400


class InvalidSubmission(CrowdWorkError):
    """The answers were refused; ``errors`` maps each field to its messages."""

    status_code = 400

    def __init__(self, message: str = "", *, errors: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.errors = errors or {}


class BrokenItem(CrowdWorkError):
    """The task's stored item does not fit its round's task type; it was given back."""

    status_code = 409


class NotQualified(CrowdWorkError):
    status_code = 403


class AssignmentNotFound(CrowdWorkError):
    status_code = 404


class NotYourAssignment(AssignmentNotFound):
    """Answered exactly like an unknown id, so probing ids tells a worker nothing about others' work."""


class RoundNotOpen(CrowdWorkError):
    status_code = 409


class AssignmentNotActive(CrowdWorkError):
    status_code = 409


class ConflictingResubmission(CrowdWorkError):
    status_code = 409


class InvalidTransition(CrowdWorkError, TransitionRefused):
    """The round, assignment or submission is not in a state this change may start from."""

    status_code = 409


class ConsentRequired(CrowdWorkError):
    """The round's study information must be read and accepted before its first task."""

    status_code = 403


def message_of(error: ValidationError) -> str:
    return " ".join(error.messages)


def invalid_submission(error: ValidationError) -> InvalidSubmission:
    errors = error.message_dict if hasattr(error, "error_dict") else {}
    return InvalidSubmission(message_of(error), errors={field: list(messages) for field, messages in errors.items()})


# What a stored item that no longer fits can raise while its page is built.
BROKEN_ITEM_ERRORS = (ValidationError, ObjectDoesNotExist, AttributeError, KeyError, TypeError, ValueError)
