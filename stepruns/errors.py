"""Refusals of the step-run services."""
from kernel.errors import ServiceError
from kernel.state_machine import TransitionRefused


class RunConflict(TransitionRefused):
    """The run is not in a status this change may move it from."""

    status_code = 409


class RunRefused(ServiceError):
    """The run cannot be started as asked."""

    status_code = 400
