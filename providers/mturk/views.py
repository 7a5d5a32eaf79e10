"""The page MTurk shows in its frame (ExternalQuestion): a preview, or the worker's task."""
from __future__ import annotations

import re

from django.conf import settings
from django.shortcuts import get_object_or_404, render
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt

from annotation.errors import BrokenItem, CrowdWorkError
from annotation.languages import worker_language
from djangokit.csp import csp_replace
from annotation.models import CollectionRound
from annotation.services.engine import task_preview
from djangokit.csp import csp_replace
from providers import services
from providers.views import consent_gate, refuse, render_task_page

from .models import HIT
from .provider import MTurkProvider, encode_answers, submit_hosts

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
# MTurk ids arrive in the query string: accept only what MTurk issues.
MTURK_ID = re.compile(r"^[A-Z0-9]{1,64}$")


def frame_ancestors(request) -> list[str]:
    return list(settings.MTURK_FRAME_ANCESTORS)


def form_action(request) -> list[str]:
    """Our own forms (study information), and the hand-over to externalSubmit, which answers with a
    redirect to MTurk's worker site (a form's redirects are checked against form-action too)."""
    return ["'self'", *sorted(submit_hosts()), *settings.MTURK_FRAME_ANCESTORS]


# MTurk shows this page in an iframe on its worker site: only those sites may frame it (CSP
# frame-ancestors, which supersedes X-Frame-Options; that header would forbid MTurk's frame too).
@csp_replace(frame_ancestors=frame_ancestors, form_action=form_action)
@xframe_options_exempt
@csrf_exempt  # the study-information answer is checked by its signed token instead
def task(request, round_id: int):
    round = get_object_or_404(CollectionRound, pk=round_id)
    hit = get_object_or_404(HIT.objects.select_related("item"), hit_id=request.GET.get("hitId", ""),
                            publication__round=round)
    assignment_id = request.GET.get("assignmentId", "")
    with translation.override(round.language):
        if not assignment_id or assignment_id == PREVIEW_ASSIGNMENT_ID:
            # Preview: the task read-only on an unsaved assignment (nothing is reserved); an item
            # that no longer fits is refused, never a 500.
            try:
                _preview, task = task_preview(item=hit.item)
            except BrokenItem:
                return refuse(request, _("This task cannot be shown. Please return the HIT."), 409)
            return render(request, "mturk/preview.html",
                          {"round": round, "handler": round.task_type_handler, "task": task})
        worker_id = request.GET.get("workerId", "")
        submit_to = request.GET.get("turkSubmitTo", "").rstrip("/")
        if not MTURK_ID.match(assignment_id) or not MTURK_ID.match(worker_id) or submit_to not in submit_hosts():
            return refuse(request, _("This task link is incomplete; open it from Mechanical Turk."), 400)
        worker = services.get_or_create_provider_worker(provider=MTurkProvider.name, external_id=worker_id)
        # The worker is known: their language from here on (the override above restores the request's).
        translation.activate(worker_language(worker=worker, round=round))
        gate = consent_gate(request, round=round, worker=worker)
        if gate is not None:
            return gate
        try:
            assignment = services.request_provider_assignment(
                round=round, worker=worker, item=hit.item, provider_assignment_id=assignment_id,
                provider_task_id=hit.hit_id)
        except CrowdWorkError as error:
            return refuse(request, error.message, error.status_code)
        if assignment is None:
            return refuse(request, _("This task is no longer available. Please return the HIT."), 409)
        return render_task_page(
            request, template="mturk/task_page.html", round=round, assignment=assignment,
            provider=MTurkProvider.name, external_submit_url=f"{submit_to}/mturk/externalSubmit",
            answers_json=encode_answers(assignment.payload) if assignment.payload else "",
        )
