"""Entry pages for workers sent by a provider (MTurk's ExternalQuestion, Prolific's study link)
and the cookie-free submit endpoint their pages post to. Thin: the services decide."""
from __future__ import annotations

import random
import re

from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt
from rest_framework import status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation import services as crowd
from annotation.models import Assignment, CollectionRound

from . import services
from .models import Publication
from .prolific import COMPLETE_URL
from .worker_access import InvalidTaskToken, assignment_for_token, task_token

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
# Provider ids arrive in the query string: accept only what the providers issue.
MTURK_ID = re.compile(r"^[A-Z0-9]{1,64}$")
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")


def _refuse(request, message: str, status_code: int):
    return render(request, "providers/message.html", {"message": message}, status=status_code)


def _task_page(request, *, round, assignment, provider: str, external_submit_url: str = ""):
    from mturk.provider import encode_answers

    handler = round.task_type_handler
    return render(request, "providers/task_page.html", {
        "round": round, "assignment": assignment, "handler": handler, "task": handler.context(assignment),
        "provider": provider, "task_token": task_token(assignment=assignment),
        "submit_url": reverse("providers-api:submit", args=[assignment.pk]),
        "external_submit_url": external_submit_url,
        "answers_json": encode_answers(assignment.payload) if assignment.payload else "",
        "seconds_left": selectors.seconds_left(assignment),
    })


@xframe_options_exempt  # MTurk shows this page in an iframe on its own site
def mturk_task(request, round_id: int):
    from mturk.models import HIT
    from mturk.provider import submit_hosts

    round = get_object_or_404(CollectionRound, pk=round_id)
    hit = get_object_or_404(HIT.objects.select_related("item"), hit_id=request.GET.get("hitId", ""),
                            publication__round=round)
    assignment_id = request.GET.get("assignmentId", "")
    with translation.override(round.language):
        if not assignment_id or assignment_id == PREVIEW_ASSIGNMENT_ID:
            # Preview: the task read-only on an unsaved assignment (nothing is reserved).
            handler = round.task_type_handler
            preview = Assignment(round=round, item=hit.item,
                                 presentation=handler.present(item=hit.item, rng=random.SystemRandom()))
            return render(request, "providers/preview.html", {
                "round": round, "handler": handler, "task": handler.context(preview)})
        worker_id = request.GET.get("workerId", "")
        submit_to = request.GET.get("turkSubmitTo", "").rstrip("/")
        if not MTURK_ID.match(assignment_id) or not MTURK_ID.match(worker_id):
            return _refuse(request, _("This task link is incomplete; open it from Mechanical Turk."), 400)
        if submit_to not in submit_hosts():
            return _refuse(request, _("This task link is incomplete; open it from Mechanical Turk."), 400)
        worker = services.get_or_create_provider_worker(provider="mturk", external_id=worker_id)
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, item=hit.item, provider_assignment_id=assignment_id,
                provider_task_id=hit.hit_id)
        except crowd.CrowdWorkError as error:
            return _refuse(request, error.message, error.status_code)
        if assignment is None:
            return _refuse(request, _("This task is no longer available. Please return the HIT."), 409)
        return _task_page(request, round=round, assignment=assignment, provider="mturk",
                          external_submit_url=f"{submit_to}/mturk/externalSubmit")


def prolific_task(request, round_id: int):
    round = get_object_or_404(CollectionRound, pk=round_id)
    participant = request.GET.get("PROLIFIC_PID", "")
    study_id = request.GET.get("STUDY_ID", "")
    submission_id = request.GET.get("SESSION_ID", "")  # Prolific's submission id
    with translation.override(round.language):
        if not all(PROLIFIC_ID.match(value) for value in (participant, study_id, submission_id)):
            return _refuse(request, _("This study link is incomplete; open it from Prolific."), 400)
        publication = get_object_or_404(Publication, round=round, provider="prolific", external_id=study_id)
        worker = services.get_or_create_provider_worker(provider="prolific", external_id=participant)
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, provider_assignment_id=submission_id, provider_task_id=study_id)
        except crowd.CrowdWorkError as error:
            return _refuse(request, error.message, error.status_code)
        if assignment is None:
            return _refuse(request, _("There is no task left for you in this study. Please return it on Prolific."),
                           409)
        if assignment.status == Assignment.Status.SUBMITTED:
            return HttpResponseRedirect(COMPLETE_URL.format(code=publication.details["completion_code"]))
        return _task_page(request, round=round, assignment=assignment, provider="prolific")


class ProviderSubmitView(APIView):
    """POST the answers with the page's task token in ``X-Task-Token``; 201 stored, 200 already stored.

    No login cookie or CSRF token: the token, signed by us and bound to the assignment and worker, is the
    credential (a page framed by MTurk cannot rely on cookies).
    """

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def post(self, request, assignment_id: int):
        try:
            assignment, worker = assignment_for_token(
                token=request.headers.get("X-Task-Token", ""), assignment_id=assignment_id)
        except InvalidTaskToken:
            return Response({"detail": _("This task page is no longer valid; reload it.")},
                            status=status.HTTP_403_FORBIDDEN)
        with translation.override(assignment.round.language):
            try:
                outcome = crowd.submit_assignment(
                    assignment_id=assignment.pk, worker=worker, data=request.data, files=request.FILES)
            except crowd.CrowdWorkError as error:
                return Response({"detail": error.message}, status=error.status_code)
        body = {"assignment": assignment.pk, "status": outcome.assignment.status,
                "payload": outcome.assignment.payload, "stored": outcome.created}
        if worker.provider == "prolific":
            publication = Publication.objects.get(round=assignment.round, provider="prolific")
            body["redirect_url"] = COMPLETE_URL.format(code=publication.details["completion_code"])
        return Response(body, status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)
