"""REST endpoints of the worker pages: next task, submit, submit-and-next, start, give back. Thin: the
services decide, and refusals reach HTTP through the one exception handler (``api.errors``)."""
from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext_noop
from djangokit.urls import reverse_with_id
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from . import image_reports, selectors
from .eligibility import read_round_for_worker
from .errors import CrowdWorkError
from .languages import speaking_to
from .models import Assignment, CollectionRound
from .permissions import NOT_A_WORKER
from .services.engine import request_assignment, task_view
from .services.submissions import return_assignment, start_assignment, submit_and_next, submit_assignment
from .services.workers import local_worker_for
from .task_types import worker_answers


# The fields of a task as "next task" sends it, each turned into JSON by the DRF field a serializer
# would use: the answer is built as a plain dict (every "next task" sends one, and a serializer
# deep-copies its declared fields on each use).
_INTEGER = serializers.IntegerField(read_only=True)
_TEXT = serializers.CharField(read_only=True)
_STATUS = serializers.ChoiceField(choices=Assignment.Status.choices, read_only=True)
_REVIEW_STATUS = serializers.ChoiceField(choices=Assignment.ReviewStatus.choices, read_only=True)
_DATETIME = serializers.DateTimeField(read_only=True)


def _field(field, value):
    return None if value is None else field.to_representation(value)


def assignment_data(assignment: Assignment, *, task: dict) -> dict:
    """The assignment of "next task": its id and round, the round's task type, its status, times and
    seconds left, the worker's own answers (``payload``; the item-terms ``result`` is never sent), the
    task as ``services.engine.task_view`` built it, and where to submit."""
    return {
        "id": _field(_INTEGER, assignment.pk),
        "round": _field(_INTEGER, assignment.round_id),
        "task_type": _field(_TEXT, assignment.round.task_type),
        "status": _field(_STATUS, assignment.status),
        "review_status": _field(_REVIEW_STATUS, assignment.review_status),
        "accepted_at": _field(_DATETIME, assignment.accepted_at),
        "expires_at": _field(_DATETIME, assignment.expires_at),
        "submitted_at": _field(_DATETIME, assignment.submitted_at),
        "seconds_left": selectors.seconds_left(assignment),
        "payload": worker_answers(assignment),
        # Plain texts and URLs: clients insert them as text, never as HTML.
        "task": task,
        "submit_url": reverse_with_id("annotation-api:submit", assignment.pk),
        "submit_and_next_url": reverse_with_id("annotation-api:submit-and-next", assignment.pk),
        # Held for a look only (a page showed it): POST ``start_url`` when the worker begins.
        "in_preview": assignment.in_preview,
        "start_url": reverse_with_id("annotation-api:start", assignment.pk),
    }


NO_MORE_TASKS = gettext_noop("There are no more tasks for you in this round.")


def next_task_body(*, round: CollectionRound, worker, assignment: Assignment | None) -> dict:
    """What "next task" answers (also inside submit-and-next's answer): the assignment (null when
    none is left, with ``detail``), the worker's progress and the round's warning to them, if any."""
    progress = selectors.worker_progress(round=round, worker=worker)
    if assignment is None:
        return {"assignment": None, "progress": progress, "detail": str(translation.gettext(NO_MORE_TASKS))}
    # Built before serialising: an item that cannot be shown is refused (and given back) here.
    task = task_view(assignment=assignment)
    body = {"assignment": assignment_data(assignment, task=task), "progress": progress}
    warning = selectors.quality_warning(round=round, worker=worker)
    if warning:
        body["warning"] = warning
    return body


class IsLocalWorkerWithRecord(BasePermission):
    """``IsLocalWorker`` that keeps the worker record it found on the request (one query for both)."""

    message = NOT_A_WORKER

    def has_permission(self, request, view) -> bool:
        request.crowd_worker = local_worker_for(user=request.user)
        return request.crowd_worker is not None


class CrowdWorkAPIView(APIView):
    permission_classes = [IsAuthenticated, IsLocalWorkerWithRecord]

    def worker(self, request):
        return request.crowd_worker


class NextTaskView(CrowdWorkAPIView):
    """POST: the worker's open task in the round, or a new one; ``assignment`` is null when none is left."""

    def post(self, request, round_id: int):
        worker = self.worker(request)
        try:
            # With what the engine, the progress and the warning need about the worker: one query.
            round = read_round_for_worker(round_id=round_id, worker=worker)
        except CollectionRound.DoesNotExist:
            raise Http404 from None
        with speaking_to(worker=worker, round=round):
            assignment = request_assignment(round=round, worker=worker)
            return Response(next_task_body(round=round, worker=worker, assignment=assignment))


class SubmitView(CrowdWorkAPIView):
    """POST the answers (JSON, form or multipart with an image file). 201 stored, 200 already stored."""

    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def post(self, request, assignment_id: int):
        worker = self.worker(request)
        # The service answers in the worker's language on the round once the assignment proves to be theirs.
        outcome = submit_assignment(
            assignment_id=assignment_id, worker=worker, data=request.data, files=request.FILES
        )
        assignment = outcome.assignment
        with speaking_to(worker=worker, round=assignment.round):
            return Response(
                {
                    "assignment": assignment.pk,
                    "status": assignment.status,
                    "review_status": assignment.review_status,
                    "payload": worker_answers(assignment),
                    "stored": outcome.created,
                    "next_url": reverse("annotation:round", args=[assignment.round_id]),
                },
                status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK,
            )


class SubmitAndNextView(CrowdWorkAPIView):
    """POST the answers as to ``submit``; the answer also carries the worker's next task in the
    round (``next``, as "next task" answers): one request per task. 201 stored, 200 already stored.
    A refusal of the next task (the round closed, say) comes as ``next.assignment`` null with its
    ``detail``: the submission is stored all the same."""

    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def post(self, request, assignment_id: int):
        worker = self.worker(request)
        # A page's task is held for a look until the worker starts it; an API client takes it now.
        preview = request.query_params.get("preview") == "1"
        outcome = submit_and_next(assignment_id=assignment_id, worker=worker, data=request.data,
                                  files=request.FILES, preview=preview)
        submitted, round = outcome.submitted, outcome.round
        with speaking_to(worker=worker, round=round):
            try:
                if outcome.refusal:
                    raise CrowdWorkError(outcome.refusal)
                following = next_task_body(round=round, worker=worker, assignment=outcome.next)
            except CrowdWorkError as error:
                following = {"assignment": None, "progress": selectors.worker_progress(round=round, worker=worker),
                             "detail": error.message}
            return Response(
                {
                    "assignment": submitted.assignment.pk,
                    "status": submitted.assignment.status,
                    "review_status": submitted.assignment.review_status,
                    "payload": worker_answers(submitted.assignment),
                    "stored": submitted.created,
                    "next": following,
                    "next_url": reverse_with_id("annotation:round", round.pk),
                },
                status=status.HTTP_201_CREATED if submitted.created else status.HTTP_200_OK,
            )


class StartView(CrowdWorkAPIView):
    """POST: the worker starts a task a page showed them; it is theirs for the round's time limit."""

    def post(self, request, assignment_id: int):
        assignment = start_assignment(assignment_id=assignment_id, worker=self.worker(request))
        return Response({"assignment": assignment.pk, "in_preview": assignment.in_preview,
                         "seconds_left": selectors.seconds_left(assignment)})


class ReturnView(CrowdWorkAPIView):
    """POST: give an open task back without doing it."""

    def post(self, request, assignment_id: int):
        assignment = return_assignment(assignment_id=assignment_id, worker=self.worker(request))
        return Response({"assignment": assignment.pk, "status": assignment.status})


class ReportImageView(CrowdWorkAPIView):
    """POST ``{"image_url": ...}``: an image of the worker's task did not load. 201 recorded, 200 already
    recorded (one report per worker and image)."""

    parser_classes = [JSONParser, FormParser]

    def post(self, request, assignment_id: int):
        outcome = image_reports.report_image(
            assignment_id=assignment_id, worker=self.worker(request), image_url=image_reports.image_url_of(request.data))
        return Response({"reported": True, "created": outcome.created},
                        status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)
