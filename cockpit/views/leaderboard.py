"""The project's leaderboard submissions: whether outsiders may submit, their tokens, submissions
and their judging (leaderboard.services; the same service as /api/leaderboard/)."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from datasets_app.uploads import UploadRefused
from leaderboard import services
from leaderboard.models import SubmissionToken

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..forms import BudgetField, ConfiguredModelField, UploadForm


class PolicyForm(forms.Form):
    accepts_outside_submissions = forms.BooleanField(
        required=False, label="Take submissions from outside the project",
        help_text="Holders of a submission token may upload predictions and read the judge leaderboard.")
    judge_model = ConfiguredModelField(default_label="the default model",
                                       help_text="The LLM that judges each submission.")
    budget_usd = BudgetField(label="Budget per submission (USD)")


class TokenForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="Who will hold the token, e.g. a lab's name.")


def _page(request, project, *, policy_form=None, token_form=None, upload_form=None, new_token=None, status=200):
    owner = is_owner(request, project)
    policy = services.policy_for(project)
    return render(request, "cockpit/leaderboard.html", {
        "project": project, "cockpit_section": "leaderboard", "can_manage": owner, "policy": policy,
        "policy_form": policy_form or PolicyForm(initial={
            "accepts_outside_submissions": policy.accepts_outside_submissions, "judge_model": policy.judge_model,
            "budget_usd": policy.budget_usd.normalize()}),
        "token_form": token_form or TokenForm(), "upload_form": upload_form or UploadForm(prefix="submission"),
        "tokens": SubmissionToken.objects.filter(project=project) if owner else [],
        "submissions": services.submissions_for(project=project)[:100], "new_token": new_token,
        "token_prefix": services.TOKEN_PREFIX,
        "api_url": request.build_absolute_uri(f"/api/leaderboard/{project.slug}/"),
    }, status=status)


@researcher_required
@never_cache
@require_http_methods(["GET", "POST"])
def leaderboard_page(request, slug: str):
    project = project_for(request, slug)
    if request.method == "GET":
        return _page(request, project)
    project = owned_project_for(request, slug)
    if "revoke" in request.POST:
        record = services.revoke_token(project=project, user=request.user, token_id=request.POST.get("revoke", "")[:20])
        messages.success(request, f"Token of {record.label} revoked.")
        return redirect("cockpit:leaderboard", slug=slug)
    if "label" in request.POST:
        form = TokenForm(request.POST)
        if not form.is_valid():
            return _page(request, project, token_form=form, status=400)
        record, raw = services.create_token(project=project, user=request.user, label=form.cleaned_data["label"])
        return _page(request, project, new_token={"label": record.label, "token": raw})
    if "submission-file" in request.FILES or "submit" in request.POST:
        form = UploadForm(request.POST, request.FILES, prefix="submission")
        if form.is_valid():
            try:
                submission = services.submit_predictions(project=project, upload=form.cleaned_data["file"],
                                                         user=request.user)
            except (UploadRefused, services.SubmissionRefused) as refused:  # the file's fault: said on its form
                form.add_error("file", refused.message)
            else:
                messages.success(request, f"Submitted {', '.join(submission.model_names)}: {submission.matched} of "
                                          f"{submission.rows} rows matched; judging against the board.")
                return redirect("cockpit:leaderboard", slug=slug)
        return _page(request, project, upload_form=form, status=400)
    form = PolicyForm(request.POST)
    if not form.is_valid():
        return _page(request, project, policy_form=form, status=400)
    services.set_policy(project=project, user=request.user, **form.cleaned_data)
    messages.success(request, "Submission settings saved.")
    return redirect("cockpit:leaderboard", slug=slug)


urlpatterns = [
    path("<slug:slug>/leaderboard/", leaderboard_page, name="leaderboard"),
]
