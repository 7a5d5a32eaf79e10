"""Worker pages. Thin: the services assign and the task types say what a page shows."""
from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from . import consent, selectors
from .eligibility import check_worker_may_work, read_round_for_worker
from .errors import CrowdWorkError
from .forms import ConsentDecisionForm, WorkerLanguagesForm
from .languages import speaking_to
from .models import CollectionRound
from .permissions import NOT_A_WORKER
from .services.engine import request_assignment, task_view
from .services.workers import local_worker_for, mark_work_history_seen, set_worker_languages


def _refuse(request, message: str, status: int):
    return render(request, "message.html", {"message": message, "back_url": reverse("annotation:work-list"),
                                            "back_label": _("Back to the list of work")}, status=status)


def worker_required(view):
    """A logged-in local worker; the view gets their ``Worker`` as ``worker``."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        worker = local_worker_for(user=request.user)
        if worker is None:
            return _refuse(request, NOT_A_WORKER, 403)
        if worker.page_language:
            # The language the worker chose for crowdbench's pages, on every device they log in from.
            with translation.override(worker.page_language):
                return view(request, *args, worker=worker, **kwargs)
        return view(request, *args, worker=worker, **kwargs)

    return wrapped


@worker_required
def work_list(request, worker):
    """The open rounds the worker can still do, with reward, expected time and hourly rate."""
    offers = selectors.work_list_for_worker(worker=worker)
    return render(request, "annotation/work_list.html", {
        "offers": offers, "worker": worker, "new_feedback": selectors.new_feedback_count(worker=worker)})


WORK_HISTORY_PAGE_SIZE = 20


@worker_required
def work_history(request, worker):
    """"My work": the worker's submitted tasks, newest first, with their review, feedback and pay."""
    page = Paginator(selectors.work_history(worker=worker), WORK_HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "earnings": selectors.earnings(worker=worker),
               "records": selectors.work_records(page.object_list, seen_before=worker.work_history_seen_at)}
    mark_work_history_seen(worker=worker)
    return render(request, "annotation/work_history.html", context)


@require_http_methods(["GET", "POST"])
@worker_required
def worker_settings(request, worker):
    """The worker states the languages they work in; rounds for speakers of a language follow."""
    form = WorkerLanguagesForm(request.POST if request.method == "POST" else None,
                               initial={"languages": worker.languages, "page_language": worker.page_language})
    if request.method == "POST" and form.is_valid():
        worker = set_worker_languages(worker=worker, languages=form.cleaned_data["languages"],
                                      page_language=form.cleaned_data["page_language"])
        with translation.override(worker.page_language or translation.get_language()):
            messages.success(request, _("Your languages are saved."))
        return redirect("annotation:work-list")
    return render(request, "annotation/settings.html", {"form": form}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@worker_required
def consent_page(request, round_id: int, worker):
    """The round's study information; the worker agrees (then gets the first task) or declines."""
    round = get_object_or_404(CollectionRound, pk=round_id, status=CollectionRound.Status.OPEN)
    if not consent.consent_required(round=round):
        return redirect("annotation:round", round.pk)
    with speaking_to(worker=worker, round=round):
        check_worker_may_work(round=round, worker=worker)
        form = ConsentDecisionForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            consent.record_decision(round=round, worker=worker, accepted=form.accepted)
            if form.accepted:
                return redirect("annotation:round", round.pk)
        decision = consent.decision_of(round=round, worker=worker)
        return render(request, "annotation/consent.html", {"round": round, "form": form, "decision": decision},
                      status=400 if form.errors else 200)


@worker_required
def round_page(request, round_id: int, worker):
    """The worker's current task of the round (a new one if they have none): the round's content, in the
    worker's language around it. A new task is held for a look (``TASK_PREVIEW_SECONDS``) and is the
    worker's for the round's time limit once they start it (the page says so on their first input);
    its submission answers with the next task (``submit-and-next``), which the page then shows."""
    try:
        # With what the engine, the progress and the warning need about the worker: one query.
        round = read_round_for_worker(round_id=round_id, worker=worker)
    except CollectionRound.DoesNotExist:
        raise Http404 from None
    if round.status == CollectionRound.Status.OPEN and not consent.has_accepted(
            round=round, worker=worker, accepted_sha256=round.worker_facts.consent_sha256):
        return redirect("annotation:consent", round.pk)
    with speaking_to(worker=worker, round=round):
        try:
            # Held only for a look until the worker starts it (``TASK_PREVIEW_SECONDS``): a worker who
            # opens the page and leaves does not keep the item from others.
            assignment = request_assignment(round=round, worker=worker, preview=True)
            progress = selectors.worker_progress(round=round, worker=worker)
            feedback = selectors.qualifying_feedback(round=round, worker=worker)
            if assignment is None:
                held = selectors.tasks_held_by_others(round=round, worker=worker)
                return render(request, "annotation/no_task.html",
                              {"round": round, "progress": progress, "feedback": feedback, "held_by_others": held})
            task = task_view(assignment=assignment)
        except CrowdWorkError as error:
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
                # Not started: the clock shows the whole time limit, which starts with the task.
                "seconds_left": (round.time_limit_seconds if assignment.in_preview
                                 else selectors.seconds_left(assignment)),
            },
        )
