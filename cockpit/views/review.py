"""The review queue: submissions as the worker saw them, approved or rejected through the one review path."""
from __future__ import annotations

import io
import json

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from kernel.csv_cells import dict_csv_writer
from quality.selectors import worker_label

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..review import (
    EXPORT_FIELDS,
    ReviewDecisionForm,
    ReviewFilterForm,
    decision_rows,
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
@require_GET
def review_export(request, slug: str, fmt: str):
    """The submissions the queue's filters select, with their review decisions, as CSV or JSON:
    for the project's members; CSV cells a spreadsheet would run as a formula are neutralised."""
    project = project_for(request, slug)
    filters = ReviewFilterForm(request.GET, user=request.user, project=project).checked()
    rows = decision_rows(queue_of(user=request.user, project=project, **filters))
    filename = f"{project.slug}-review-decisions.{fmt}"
    if fmt == "json":
        body = json.dumps({"project": project.slug, "count": len(rows), "submissions": rows}, ensure_ascii=False,
                          indent=2) + "\n"
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
    else:
        handle = io.StringIO()
        writer = dict_csv_writer(handle, EXPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(handle.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


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
    path("<slug:slug>/review/decisions.csv", review_export, {"fmt": "csv"}, name="review-export-csv"),
    path("<slug:slug>/review/decisions.json", review_export, {"fmt": "json"}, name="review-export-json"),
]
