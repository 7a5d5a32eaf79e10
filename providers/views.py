"""What every provider's worker pages share: the message page, the task page, and the cookie-free
submit endpoint they post to. Each provider's entry page lives in its own package (``views.py``
there) and is mounted by ``providers.urls`` from the registry. Thin: the services decide."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.utils import translation
from rest_framework import status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation import services as crowd
from annotation.task_types import worker_answers

from . import services
from .registry import get_provider
from .worker_access import assignment_for_token, task_token


def refuse(request, message: str, status_code: int):
    return render(request, "providers/message.html", {"message": message}, status=status_code)


def render_task_page(request, *, template: str, round, assignment, provider: str, **context):
    """The task page of a provider's worker, from the provider's template (which extends
    ``providers/task_page.html``). A broken item is refused cleanly (and given back) by the engine."""
    handler = round.task_type_handler
    try:
        task = crowd.task_view(assignment=assignment)
    except crowd.CrowdWorkError as error:
        return refuse(request, error.message, error.status_code)
    return render(request, template, {
        "round": round, "assignment": assignment, "handler": handler, "task": task,
        "provider": provider, "task_token": task_token(assignment=assignment),
        "submit_url": reverse("providers-api:submit", args=[assignment.pk]),
        "seconds_left": selectors.seconds_left(assignment),
        **context,
    })


class ProviderSubmitView(APIView):
    """POST the answers with the page's task token in ``X-Task-Token``; 201 stored, 200 already stored.

    No login cookie or CSRF token: the token, signed by us and bound to the assignment and worker, is the
    credential (a page framed by MTurk cannot rely on cookies). Refusals (a bad token, a refused
    submission) are service errors and answer through the API's one exception handler.
    """

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def post(self, request, assignment_id: int):
        assignment, worker = assignment_for_token(
            token=request.headers.get("X-Task-Token", ""), assignment_id=assignment_id)
        with translation.override(assignment.round.language):
            outcome = crowd.submit_assignment(
                assignment_id=assignment.pk, worker=worker, data=request.data, files=request.FILES)
            # Stored either way; it counts once the provider confirms it (now, or at the next sync).
            services.confirm_submission(assignment=outcome.assignment)
        body = {"assignment": assignment.pk, "status": outcome.assignment.status,
                "payload": worker_answers(outcome.assignment), "stored": outcome.created,
                **get_provider(worker.provider).after_submit(assignment=outcome.assignment)}
        return Response(body, status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)
