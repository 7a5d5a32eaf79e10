"""Refusals of the projects and releases services (reach HTTP through api.errors)."""
from __future__ import annotations

from kernel.errors import ServiceError


class ProjectError(ServiceError):
    """The project request was refused."""


class ProjectNotFound(ProjectError):
    """No such project among yours."""

    status_code = 404


class ProjectPermissionDenied(ProjectError):
    """Only an owner of the project may do this."""

    status_code = 403


class ProjectConflict(ProjectError):
    """That would clash with something that exists."""

    status_code = 409


class ReleaseError(ServiceError):
    """The release could not be made; nothing was written."""


class ReleaseExists(ReleaseError):
    """A release with this name and version exists; releases never change once made."""

    status_code = 409


class ReleaseFileNotFound(ReleaseError):
    """No such file in this release."""

    status_code = 404


class ReleaseFileChanged(ReleaseError):
    """A release file no longer matches the checksum recorded when the release was made."""

    status_code = 409
