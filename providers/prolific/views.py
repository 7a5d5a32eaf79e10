"""The page a Prolific participant lands on from the study link (PROLIFIC_PID, STUDY_ID, SESSION_ID)."""
from __future__ import annotations

import re

from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt
from django.utils.translation import gettext as _

from annotation.errors import CrowdWorkError
from annotation.languages import worker_language
from annotation.models import Assignment, CollectionRound

from .. import services
from ..models import Publication
from ..views import consent_gate, refuse, render_task_page
from .provider import COMPLETE_URL, ProlificProvider, unconfirmed_message

# Prolific ids arrive in the query string: accept only what Prolific issues.
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")


@csrf_exempt  # the study-information answer is checked by its signed token instead
def task(request, round_id: int):
    round = get_object_or_404(CollectionRound, pk=round_id)
    participant = request.GET.get("PROLIFIC_PID", "")
    study_id = request.GET.get("STUDY_ID", "")
    submission_id = request.GET.get("SESSION_ID", "")  # Prolific's submission id
    with translation.override(round.language):
        if not all(PROLIFIC_ID.match(value) for value in (participant, study_id, submission_id)):
            return refuse(request, _("This study link is incomplete; open it from Prolific."), 400)
        publication = get_object_or_404(Publication, round=round, provider=ProlificProvider.name,
                                        external_id=study_id)
        worker = services.get_or_create_provider_worker(provider=ProlificProvider.name, external_id=participant)
        # The worker is known: their language from here on (the override above restores the request's).
        translation.activate(worker_language(worker=worker, round=round))
        gate = consent_gate(request, round=round, worker=worker)
        if gate is not None:
            return gate
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, provider_assignment_id=submission_id, provider_task_id=study_id)
        except CrowdWorkError as error:
            return refuse(request, error.message, error.status_code)
        if assignment is None:
            return refuse(request, _("There is no task left for you in this study. Please return it on Prolific."),
                          409)
        if assignment.status == Assignment.Status.SUBMITTED:
            # The completion code only for a session Prolific confirms (looked up again, at most once a minute).
            if services.confirm_submission(assignment=assignment).confirmation != Assignment.Confirmation.CONFIRMED:
                return refuse(request, unconfirmed_message(), 403)
            return HttpResponseRedirect(COMPLETE_URL.format(code=publication.details["completion_code"]))
        return render_task_page(request, template="prolific/task_page.html", round=round, assignment=assignment,
                                provider=ProlificProvider.name)
