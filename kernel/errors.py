"""The one base class of refusals raised by services, and the HTTP status each kind maps to.

Services raise subclasses with a message safe to show to the person who asked; the API's
exception handler (``api.errors``) and the pages turn them into responses, so no view
catches service errors by hand. This module has no Django import: any layer may raise these.
"""
from __future__ import annotations


class ServiceError(Exception):
    """A refused request: ``status_code`` is the HTTP status to answer with, ``message`` the text."""

    status_code = 400

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message or self.default_message()

    def default_message(self) -> str:
        return self.__class__.__doc__.strip().splitlines()[0] if self.__class__.__doc__ else "Refused."
