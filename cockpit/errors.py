"""Refusals of the cockpit itself (the services raise their own)."""
from kernel.errors import ServiceError


class NotAResearcher(ServiceError):
    """Only researchers may use the cockpit."""

    status_code = 403


class DryRunRequired(ServiceError):
    """Publishing needs a fresh dry run of the round as it is now."""

    status_code = 400


class BadQuery(ServiceError):
    """A page was asked for with query parameters it does not take."""

    status_code = 400
