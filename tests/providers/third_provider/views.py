"""The page a worker of the third crowd lands on from the platform (?worker=&place=&task=)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt

from annotation.errors import CrowdWorkError
from annotation.models import CollectionRound
from providers import services
from providers.views import consent_gate, refuse, render_task_page

from .provider import ThirdProvider


@csrf_exempt  # the study-information answer is checked by its signed token instead
def task(request, round_id: int):
    round = get_object_or_404(CollectionRound, pk=round_id)
    worker_id, place_id, task_id = (request.GET.get(name, "")[:64] for name in ("worker", "place", "task"))
    if not (worker_id and place_id and task_id):
        return refuse(request, "This link is incomplete; open it from the platform.", 400)
    worker = services.get_or_create_provider_worker(provider=ThirdProvider.name, external_id=worker_id)
    gate = consent_gate(request, round=round, worker=worker)
    if gate is not None:
        return gate
    try:
        assignment = services.request_provider_assignment(
            round=round, worker=worker, provider_assignment_id=place_id, provider_task_id=task_id)
    except CrowdWorkError as error:
        return refuse(request, error.message, error.status_code)
    if assignment is None:
        return refuse(request, "There is no task left for you.", 409)
    return render_task_page(request, template="providers/task_page.html", round=round, assignment=assignment,
                            provider=ThirdProvider.name)
