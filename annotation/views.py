"""Worker pages. Thin: the services assign and the task types say what a page shows."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.utils import translation

from . import selectors, services
from .models import CollectionRound
from .permissions import NOT_A_WORKER, is_local_worker


def _refuse(request, message: str, status: int):
    return render(request, "annotation/message.html", {"message": message}, status=status)


@login_required
def work_list(request):
    """Open rounds the logged-in worker can take part in, with their progress."""
    if not is_local_worker(request.user):
        return _refuse(request, NOT_A_WORKER, 403)
    worker = services.get_or_create_local_worker(user=request.user)
    rounds = selectors.open_rounds_for_worker(worker=worker)
    return render(request, "annotation/work_list.html", {"rounds": rounds})


@login_required
def round_page(request, round_id: int):
    """The worker's current task of the round (a new one if they have none), in the round's language."""
    if not is_local_worker(request.user):
        return _refuse(request, NOT_A_WORKER, 403)
    round = get_object_or_404(CollectionRound, pk=round_id)
    worker = services.get_or_create_local_worker(user=request.user)
    with translation.override(round.language):
        try:
            assignment = services.request_assignment(round=round, worker=worker)
            progress = selectors.worker_progress(round=round, worker=worker)
            feedback = selectors.qualifying_feedback(round=round, worker=worker)
            if assignment is None:
                return render(request, "annotation/no_task.html",
                              {"round": round, "progress": progress, "feedback": feedback})
            task = services.task_view(assignment=assignment)
        except services.CrowdWorkError as error:
            return _refuse(request, error.message, error.status_code)
        return render(
            request,
            "annotation/task_page.html",
            {
                "round": round,
                "assignment": assignment,
                "handler": round.task_type_handler,
                "task": task,
                "progress": progress,
                "quality_warning": selectors.quality_warning(round=round, worker=worker),
                "feedback": feedback,
                "seconds_left": selectors.seconds_left(assignment),
            },
        )
