"""Refusals of the quality services and reads (reach HTTP through crowdbench's error handling)."""
from __future__ import annotations

from kernel.errors import ServiceError


class QualityError(ServiceError):
    """The quality request was refused."""


class WorkerNotFound(QualityError):
    """No such worker in this project's rounds."""

    status_code = 404
