"""The project dashboard: the pipeline board (instances by stage with the next action, IRR review
sets, rounds in progress, models), background LLM step runs and material uploads."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from datasets_app.uploads import import_families_upload, import_predictions_upload, import_review_sets_upload
from kernel.errors import ServiceError
from llm.config import configured_models
from llm.steps import format_usd
from stepruns.kinds.registry import KINDS
from stepruns.models import StepRun
from stepruns.services import start_run

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..forms import RunForm, UploadForm, no_model_message
from ..selectors import first_steps, pipeline_board

# Upload name → (what it takes in, the service, the format in a line).
UPLOADS = {
    "predictions": ("Predictions file", import_predictions_upload,
                    "CSV: instruction, image (or images, a JSON list), one '<model> prediction' column per model."),
    "review-sets": ("IRR review sets", import_review_sets_upload,
                    "CSV or JSON lines: item_id, language (en or ja), category, image_url, license, creator, source_url, "
                    "review_1 … review_5 (or a reviews list)."),
    "families": ("Instruction families", import_families_upload,
                 "JSON lines: name, description, multi_image, seed_instruction, seed_response, "
                 "seed_image_urls, license."),
}


def _start_forms(project, bound_kind: str | None = None, data=None, refusal: str | None = None):
    return [
        {"name": name, "kind": kind,
         "form": kind.form(data if name == bound_kind else None, project=project),
         "run_form": RunForm(data if name == bound_kind else None, prefix=f"{name}-run"),
         "refusal": refusal if name == bound_kind else None}
        for name, kind in KINDS.items()
    ]


def _board(request, project, *, bound_kind=None, data=None, refused_upload: tuple[str, str] | None = None,
           step_refusal: str | None = None, status=200):
    """The board; ``refused_upload`` is ``(upload name, why)`` for an upload to show refused in its own
    form; ``step_refusal`` why the step ``bound_kind`` was not started, shown in its form."""
    owner = is_owner(request, project)
    refused_name, why = refused_upload or (None, None)
    context = {
        "project": project, "cockpit_section": "board", "board": pipeline_board(project), "can_manage": owner,
        "first_steps": first_steps(project),
        "start_forms": _start_forms(project, bound_kind, data, step_refusal) if owner else [],
        "no_model_message": "" if configured_models() else no_model_message(),
        "uploads": [{"name": name, "label": label, "help": help, "form": UploadForm(prefix=name),
                     "error": why if name == refused_name else None}
                    for name, (label, _, help) in UPLOADS.items()] if owner else [],
        # The upload's form is far down the board: the top of the page says it was refused and links it.
        "refused_upload": {"name": refused_name, "label": UPLOADS[refused_name][0]} if refused_name in UPLOADS else None,
    }
    return render(request, "cockpit/board.html", context, status=status)


@researcher_required
@require_GET
def project_dashboard(request, slug: str):
    return _board(request, project_for(request, slug))


@researcher_required
@require_http_methods(["GET", "POST"])
def start_step(request, slug: str, kind: str):
    project = owned_project_for(request, slug)
    step_kind = KINDS.get(kind)
    if request.method == "GET":
        # The address a refused start was shown at, reloaded or opened again: the step's form.
        return redirect(f"{reverse('cockpit:project', kwargs={'slug': project.slug})}#start-{step_kind.name}")
    run_form = RunForm(request.POST, prefix=f"{step_kind.name}-run")
    form = step_kind.form(request.POST, project=project)
    if not (run_form.is_valid() and form.is_valid()):
        messages.error(request, f"{step_kind.label}: please correct the form below.")
        return _board(request, project, bound_kind=step_kind.name, data=request.POST, status=400)
    try:
        run = start_run(project=project, user=request.user, kind=step_kind.name,
                        model=run_form.cleaned_data["model"], budget_usd=run_form.cleaned_data["budget_usd"],
                        parameters=form.cleaned_data)
    except ServiceError as error:  # nothing was started: shown in the step's own form, input kept
        messages.error(request, f"{step_kind.label}: not started; see the form below.")
        return _board(request, project, bound_kind=step_kind.name, data=request.POST, step_refusal=error.message,
                      status=error.status_code)
    return redirect("cockpit:step-run", slug=project.slug, run_id=run.pk)


@researcher_required
@require_GET
def step_run(request, slug: str, run_id: int):
    project = project_for(request, slug)
    run = get_object_or_404(StepRun.objects.select_related("created_by"), project=project, pk=run_id)
    kind = KINDS.get(run.kind)
    return render(request, "cockpit/step_run.html", {
        "project": project, "cockpit_section": "board", "run": run, "kind": kind,
        "budget_shown": format_usd(run.budget_usd) if run.budget_usd is not None else "",
        "parameters": [(key, ", ".join(map(str, value)) if isinstance(value, list) else value)
                       for key, value in run.parameters.items()],
    })


@researcher_required
@require_POST
def upload(request, slug: str, what: str):
    project = owned_project_for(request, slug)
    if what not in UPLOADS:
        return render(request, "message.html", {"message": f"Nothing to upload as {what[:40]!r}."}, status=404)
    label, service, _ = UPLOADS[what]
    form = UploadForm(request.POST, request.FILES, prefix=what)
    if not form.is_valid():
        problem = " ".join(form.errors.get("file", [])) or "choose a file to upload."
        return _board(request, project, refused_upload=(what, f"{label}: {problem}"), status=400)
    try:
        report = service(project=project, upload=form.cleaned_data["file"])
    except ServiceError as error:  # nothing was imported: shown in the upload's own form
        return _board(request, project, refused_upload=(what, error.message), status=error.status_code)
    messages.success(request, report.summary())
    follow = [name for name, kind in KINDS.items() if kind.follows_predictions] if what == "predictions" else []
    if follow:
        query = urlencode({"new": ",".join(report.per_model)})
        return redirect(f"{reverse('cockpit:board-judge', kwargs={'slug': project.slug})}?{query}")
    return redirect("cockpit:project", slug=project.slug)


@researcher_required
@require_GET
def judge_new_models(request, slug: str):
    """After a predictions upload: judge the new model(s) against the board's models and the reference."""
    project = owned_project_for(request, slug)
    new = [name for name in request.GET.get("new", "").split(",") if name][:20]
    forms = [
        {"name": name, "kind": kind, "run_form": RunForm(prefix=f"{name}-run"),
         "form": kind.form(project=project, initial=kind.parameters_after_predictions(project=project, new_models=new))}
        for name, kind in KINDS.items() if kind.follows_predictions
    ]
    return render(request, "cockpit/board_judge.html", {
        "project": project, "cockpit_section": "board", "new_models": new, "start_forms": forms,
        "no_model_message": "" if configured_models() else no_model_message(),
    })


urlpatterns = [
    path("<slug:slug>/", project_dashboard, name="project"),
    path("<slug:slug>/board/run/<str:kind>/", start_step, name="start-step"),
    path("<slug:slug>/board/runs/<int:run_id>/", step_run, name="step-run"),
    path("<slug:slug>/board/upload/<str:what>/", upload, name="board-upload"),
    path("<slug:slug>/board/judge/", judge_new_models, name="board-judge"),
]
