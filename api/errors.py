"""One mapping of errors to HTTP for every API view (REST_FRAMEWORK["EXCEPTION_HANDLER"]).

DRF's own exceptions keep DRF's answers; a ``ServiceError`` answers its ``status_code`` with
``{"detail": message}``; a Django ``ValidationError`` that escapes a service is a 400 with its
messages. Anything else is a real bug and stays a 500.
"""
from __future__ import annotations

from django.core.exceptions import ValidationError
from kernel.errors import ServiceError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def error_body(error: ServiceError) -> dict:
    body = {"detail": error.message}
    # Refusals of a form's fields (e.g. a task submission) also say which field each message is about.
    if getattr(error, "errors", None):
        body["errors"] = error.errors
    return body


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, ServiceError):
        return Response(error_body(exc), status=exc.status_code)
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):
            return Response({"detail": " ".join(exc.messages), "errors": exc.message_dict}, status=400)
        return Response({"detail": " ".join(exc.messages)}, status=400)
    return None
