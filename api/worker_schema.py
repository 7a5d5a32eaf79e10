"""The OpenAPI schema of the worker endpoints (/api/work/ for logged-in local workers, /api/providers/
for pages opened from MTurk or Prolific with their task token), served at /api/work/schema/.

The views stay as they are (annotation/api.py, providers/views.py); these drf-spectacular view
extensions only describe them: answers are free-form JSON objects whose fields docs/crowd-work.md
and docs/providers.md list, and every refusal is ``{"detail", "errors"?}`` from the one exception
handler (api/errors.py).
"""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiViewExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view

from .access import WORKER_API_PREFIXES, BadRequestSerializer, ErrorSerializer

WORKER_SCHEMA_SETTINGS = {
    "TITLE": "crowdbench worker API",
    "DESCRIPTION": "Next task, submit, submit-and-next, start, give back and image reports for workers. See docs/crowd-work.md "
                   "and docs/providers.md.",
    "PREPROCESSING_HOOKS": ["api.worker_schema.worker_endpoints"],
}

ANSWERS = {"application/json": OpenApiTypes.OBJECT, "multipart/form-data": OpenApiTypes.OBJECT,
           "application/x-www-form-urlencoded": OpenApiTypes.OBJECT}
TASK_TOKEN = OpenApiParameter("X-Task-Token", str, OpenApiParameter.HEADER, required=True,
                              description="The signed task token of the provider page.")


def worker_endpoints(endpoints):
    """drf-spectacular preprocessing hook: only the worker and provider endpoints."""
    return [endpoint for endpoint in endpoints
            if endpoint[0].startswith(WORKER_API_PREFIXES) and not endpoint[0].endswith("/schema/")]


def refusals(*codes: int) -> dict:
    described = {
        400: "Refused answers or a malformed request.",
        403: "Not a worker of this site, or a task token that is not valid for this assignment.",
        404: "No such round or assignment of yours.",
        409: "The assignment or round does not take this now (expired, already done, round closed).",
        413: "The request body is too large.",
        415: "A body type the endpoint does not take.",
        429: "Too many requests: wait for Retry-After seconds.",
    }
    return {code: OpenApiResponse(BadRequestSerializer if code == 400 else ErrorSerializer,
                                  description=described[code]) for code in codes}


LOGGED_IN_REFUSALS = refusals(400, 403, 404, 409, 413, 415, 429)


def stored(description: str) -> dict:
    return {201: OpenApiResponse(OpenApiTypes.OBJECT, description=description),
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Already stored: the same answer as before.")}


def described(view_class, **operation):
    @extend_schema_view(post=extend_schema(**operation))
    class Described(view_class):
        pass

    return Described


class NextTaskSchema(OpenApiViewExtension):
    target_class = "annotation.api.NextTaskView"

    def view_replacement(self):
        return described(self.target_class, request=None, responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="``assignment`` (null when none is left) "
                                                                   "and the worker's ``progress``."),
            **LOGGED_IN_REFUSALS})


class SubmitSchema(OpenApiViewExtension):
    target_class = "annotation.api.SubmitView"

    def view_replacement(self):
        return described(self.target_class, request=ANSWERS,
                         responses={**stored("Stored: the assignment's status and the worker's answers."),
                                    **LOGGED_IN_REFUSALS})


class SubmitAndNextSchema(OpenApiViewExtension):
    target_class = "annotation.api.SubmitAndNextView"

    def view_replacement(self):
        preview = OpenApiParameter("preview", str, OpenApiParameter.QUERY, required=False,
                                   description="1: hold the next task for a look only, until it is started (pages).")
        return described(self.target_class, request=ANSWERS, parameters=[preview],
                         responses={**stored("Stored: the assignment's status and the worker's answers, and "
                                             "``next``: the worker's next task as next task answers it."),
                                    **LOGGED_IN_REFUSALS})


class StartSchema(OpenApiViewExtension):
    target_class = "annotation.api.StartView"

    def view_replacement(self):
        return described(self.target_class, request=None, responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Started: the task is the worker's for the "
                                                                   "round's time limit (``seconds_left``)."),
            **LOGGED_IN_REFUSALS})


class ReturnSchema(OpenApiViewExtension):
    target_class = "annotation.api.ReturnView"

    def view_replacement(self):
        return described(self.target_class, request=None, responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Given back: the assignment and its status."),
            **LOGGED_IN_REFUSALS})


class ReportImageSchema(OpenApiViewExtension):
    target_class = "annotation.api.ReportImageView"

    def view_replacement(self):
        return described(self.target_class, request=OpenApiTypes.OBJECT,
                         responses={**stored("Recorded."), **LOGGED_IN_REFUSALS})


class ProviderSubmitSchema(OpenApiViewExtension):
    target_class = "providers.views.ProviderSubmitView"

    def view_replacement(self):
        return described(self.target_class, request=ANSWERS, parameters=[TASK_TOKEN],
                         responses={**stored("Stored; it counts once the provider confirms it."),
                                    **LOGGED_IN_REFUSALS})


class ProviderReportImageSchema(OpenApiViewExtension):
    target_class = "providers.views.ProviderReportImageView"

    def view_replacement(self):
        return described(self.target_class, request=OpenApiTypes.OBJECT, parameters=[TASK_TOKEN],
                         responses={**stored("Recorded."), **LOGGED_IN_REFUSALS})
