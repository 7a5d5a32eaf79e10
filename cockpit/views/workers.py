"""Workers who took part in a project's rounds, and a page per worker: history, gold accuracy,
agreement with the majority, median time, reliability; owners block and qualify here (through the
provider services) and recompute the stored numbers (through the quality service)."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation.worker_accounts import create_local_worker
from djangokit.text_input import clean_text
from kernel.errors import ServiceError
from providers.services import block_worker, qualify_worker
from quality.selectors import project_worker, project_workers, worker_history, worker_label
from quality.services import recompute_project_quality

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..forms import NewWorkerForm


class BlockForm(forms.Form):
    reason = forms.CharField(label=gettext_lazy("Reason (sent to the worker's platform)"), max_length=500)

    def clean_reason(self):
        return clean_text(self.cleaned_data["reason"], label=str(self.fields["reason"].label), max_length=500)


def _worker_list(request, project, *, new_worker_form=None, new_link=None, new_account=None, status=200):
    return render(request, "cockpit/workers/list.html", {
        "project": project, "cockpit_section": "workers", "workers": project_workers(project),
        "can_manage": is_owner(request, project), "new_worker_form": new_worker_form or NewWorkerForm(),
        "new_link": new_link, "new_account": new_account,
    }, status=status)


@researcher_required
@require_GET
def worker_list(request, slug: str):
    return _worker_list(request, project_for(request, slug))


@researcher_required
@never_cache
@require_POST
def worker_new(request, slug: str):
    """A local worker made by an owner; their one-time link is shown once, on this answer."""
    project = owned_project_for(request, slug)
    form = NewWorkerForm(request.POST)
    if form.is_valid():
        try:
            worker, link_path = create_local_worker(project=project, by=request.user, **form.cleaned_data)
        except ServiceError as refused:
            form.add_error("username", refused.message)
        else:
            return _worker_list(request, project, new_link=request.build_absolute_uri(link_path),
                                new_account=worker_label(worker))
    return _worker_list(request, project, new_worker_form=form, status=400)


@researcher_required
@require_POST
def recompute_quality(request, slug: str):
    project = owned_project_for(request, slug)
    rounds = recompute_project_quality(project=project)
    messages.success(request, _("Worker quality recomputed for %(n)d rounds.") % {"n": len(rounds)})
    return redirect("cockpit:workers", slug=slug)


@researcher_required
@require_GET
def worker_detail(request, slug: str, worker_id: str):
    project = project_for(request, slug)
    worker = project_worker(project, worker_id)
    return render(request, "cockpit/workers/detail.html", {
        "project": project, "cockpit_section": "workers", "worker": worker, "label": worker_label(worker),
        "qualified": worker.qualifications.filter(project=project).exists(),
        "can_manage": is_owner(request, project), "block_form": BlockForm(), **worker_history(project, worker),
    })


@researcher_required
@require_POST
def worker_block(request, slug: str, worker_id: str):
    project = owned_project_for(request, slug)
    worker = project_worker(project, worker_id)
    form = BlockForm(request.POST)
    if not form.is_valid():
        for error in form.errors.get("reason", []):
            messages.error(request, _("Not blocked: %(error)s") % {"error": error})
        return redirect("cockpit:worker", slug=slug, worker_id=worker.pk)
    if not worker.is_blocked:
        block_worker(worker=worker, reason=form.cleaned_data["reason"])
    messages.success(request, _("%(worker)s is blocked.") % {"worker": worker_label(worker)})
    return redirect("cockpit:worker", slug=slug, worker_id=worker.pk)


@researcher_required
@require_POST
def worker_qualify(request, slug: str, worker_id: str):
    project = owned_project_for(request, slug)
    worker = project_worker(project, worker_id)
    granted = qualify_worker(worker=worker, project=project, granted_by=request.user)
    message = _("%(worker)s is qualified for this project's rounds.") % {"worker": worker_label(worker)}
    if granted:
        message += " " + _("Provider qualifications granted: %(ids)s.") % {"ids": ", ".join(granted)}
    messages.success(request, message)
    return redirect("cockpit:worker", slug=slug, worker_id=worker.pk)


urlpatterns = [
    path("<slug:slug>/workers/", worker_list, name="workers"),
    path("<slug:slug>/workers/new/", worker_new, name="worker-new"),
    path("<slug:slug>/workers/recompute/", recompute_quality, name="workers_recompute"),
    path("<slug:slug>/workers/<int:worker_id>/", worker_detail, name="worker"),
    path("<slug:slug>/workers/<int:worker_id>/block/", worker_block, name="worker_block"),
    path("<slug:slug>/workers/<int:worker_id>/qualify/", worker_qualify, name="worker_qualify"),
]
