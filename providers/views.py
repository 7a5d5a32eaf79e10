"""What every provider's worker pages share: the message page, the task page, and the cookie-free
submit endpoint they post to. Each provider's entry page lives in its own package (``views.py``
there) and is mounted by ``providers.urls`` from the registry. Thin: the services decide."""
from __future__ import annotations

from django.core import signing
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import consent, image_reports, selectors
from annotation.errors import CrowdWorkError
from annotation.forms import ConsentDecisionForm
from annotation.languages import speaking_to
from annotation.services.engine import task_view
from annotation.services.submissions import submit_assignment
from annotation.task_types import worker_answers

from . import services
from .registry import get_provider
from .worker_access import assignment_for_token, task_token


def refuse(request, message: str, status_code: int):
    return render(request, "message.html", {"message": message, "no_site_links": True}, status=status_code)


CONSENT_SALT = "providers.consent"
CONSENT_TOKEN_SECONDS = 24 * 3600


def consent_gate(request, *, round, worker):
    """A round's study information before a provider worker's first task: the consent page until the
    worker agrees, else None. The answer is posted back to the same entry address with a token signed
    for this round and worker (a page framed by MTurk has no cookies, so no CSRF cookie either)."""
    if consent.has_accepted(round=round, worker=worker):
        return None
    expected = {"r": round.pk, "w": worker.pk}
    form = ConsentDecisionForm(request.POST if request.method == "POST" else None)
    status_code = 200
    if request.method == "POST":
        try:
            signed = signing.loads(request.POST.get("consent_token", ""), salt=CONSENT_SALT,
                                   max_age=CONSENT_TOKEN_SECONDS)
        except signing.BadSignature:
            signed = None
        if signed != expected:
            return refuse(request, _("This page is no longer valid; open the task again from its link."), 403)
        if form.is_valid():
            consent.record_decision(round=round, worker=worker, accepted=form.accepted)
            if form.accepted:
                return HttpResponseRedirect(request.get_full_path())
        else:
            status_code = 400
    return render(request, "providers/consent.html", {
        "round": round, "form": form, "decision": consent.decision_of(round=round, worker=worker),
        "consent_token": signing.dumps(expected, salt=CONSENT_SALT), "action": request.get_full_path(),
    }, status=status_code)


def render_task_page(request, *, template: str, round, assignment, provider: str, **context):
    """The task page of a provider's worker, from the provider's template (which extends
    ``providers/task_page.html``). A broken item is refused cleanly (and given back) by the engine."""
    handler = round.task_type_handler
    try:
        task = task_view(assignment=assignment)
    except CrowdWorkError as error:
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
        with speaking_to(worker=worker, round=assignment.round):
            outcome = submit_assignment(
                assignment_id=assignment.pk, worker=worker, data=request.data, files=request.FILES)
            # Stored either way; it counts once the provider confirms it (now, or at the next sync).
            # What comes next (e.g. a completion code) depends on that answer.
            saved = services.confirm_submission(assignment=outcome.assignment)
            body = {"assignment": assignment.pk, "status": saved.status,
                    "payload": worker_answers(saved), "stored": outcome.created,
                    **get_provider(worker.provider).after_submit(assignment=saved)}
        return Response(body, status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)


class ProviderReportImageView(APIView):
    """POST ``{"image_url": ...}`` with the page's task token in ``X-Task-Token``: an image of the task did
    not load. 201 recorded, 200 already recorded."""

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, FormParser]

    def post(self, request, assignment_id: int):
        assignment, worker = assignment_for_token(
            token=request.headers.get("X-Task-Token", ""), assignment_id=assignment_id)
        outcome = image_reports.report_image(
            assignment_id=assignment.pk, worker=worker, image_url=image_reports.image_url_of(request.data))
        return Response({"reported": True, "created": outcome.created},
                        status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)
