"""The review queue: submissions as the worker saw them, approved or rejected through the one review path."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from quality.selectors import worker_label

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..review import (
    ReviewDecisionForm,
    ReviewFilterForm,
    queue_page,
    review,
    review_queue as queue_of,
)


@researcher_required
@require_GET
def review_queue(request, slug: str):
    project = project_for(request, slug)
    form = ReviewFilterForm(request.GET, user=request.user, project=project)
    filters = form.checked()
    submissions = queue_of(user=request.user, project=project, **filters)
    page, entries = queue_page(submissions=submissions, number=request.GET.get("page"))
    return render(request, "cockpit/review/queue.html", {
        "project": project, "cockpit_section": "review", "form": form, "page": page, "entries": entries,
        "can_review": is_owner(request, project), "back": request.get_full_path(),
    })


@researcher_required
@require_POST
def review_decide(request, slug: str):
    project = owned_project_for(request, slug)
    form = ReviewDecisionForm(request.POST)
    if refusal := form.refusal():
        # A decision the form refuses goes back to the queue it came from, filters kept.
        messages.error(request, refusal)
        return redirect(_back(request, slug))
    decision = form.cleaned_data
    report = review(user=request.user, project=project, **decision)
    label = {assignment.pk: worker_label(assignment.worker)
             for assignment in [*report.done, *report.already, *(a for a, _ in report.failed)]}
    if report.done:
        verb = "Approved" if decision["decision"] == "approve" else "Rejected"
        count = len(report.done)
        messages.success(request, f"{verb} {count} submission{'s' if count != 1 else ''}.")
    for assignment in report.already:
        messages.info(request, f"Submission {assignment.pk} ({label[assignment.pk]}) already had this decision.")
    for assignment, problem in report.failed:
        messages.error(request, f"Submission {assignment.pk} ({label[assignment.pk]}) was not changed: {problem}")
    return redirect(_back(request, slug))


def _back(request, slug: str) -> str:
    """The queue page the decision came from (its filters and page), never another address."""
    queue = reverse("cockpit:review", args=[slug])
    back = request.POST.get("back", "")
    if back.startswith(queue) and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return back
    return queue


urlpatterns = [
    path("<slug:slug>/review/", review_queue, name="review"),
    path("<slug:slug>/review/decide/", review_decide, name="review-decide"),
]
