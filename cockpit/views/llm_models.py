"""The project's LLM page: the models its steps may use, where each comes from (the embedded model
or the environment setting that names it), their prices, the project's LLM budgets and spending,
and a "test this model" button. Keys stay in the environment: the page says only whether one is set."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from djangokit.money import MoneySum
from llm.config import LLMNotConfigured
from llm.overview import overview, try_model
from llm.steps import format_usd
from stepruns.models import StepRun

from ..access import is_owner, owned_project_for, project_for, researcher_required

RECENT_RUNS = 20


def _page(request, project, *, trial=None, trial_error="", status=200):
    runs = StepRun.objects.filter(project=project).exclude(model="")
    spending = list(runs.values("model").annotate(spent=MoneySum("cost_usd")).order_by("model"))
    # USD as the board shows a run's cost (StepRun.cost_shown): exact, without trailing zeros.
    for row in spending:
        row["spent_shown"] = format_usd(row["spent"])
    recent_runs = list(runs.order_by("-pk")[:RECENT_RUNS])
    for run in recent_runs:
        run.budget_shown = "" if run.budget_usd is None else format_usd(run.budget_usd)
    return render(request, "cockpit/llm_models.html", {
        "project": project, "cockpit_section": "llm", "overview": overview(), "can_test": is_owner(request, project),
        "recent_runs": recent_runs, "spending": spending,
        "trial": trial, "trial_error": trial_error,
    }, status=status)


@researcher_required
@never_cache
@require_GET
def llm_models(request, slug: str):
    return _page(request, project_for(request, slug))


@researcher_required
@never_cache
@require_POST
def test_llm_model(request, slug: str):
    """Sends one short request to the chosen model (owners: it may cost money) and shows the reply."""
    project = owned_project_for(request, slug)
    model = request.POST.get("model", "")[:200]
    try:
        trial = try_model(model)
    except LLMNotConfigured as error:
        return _page(request, project, trial_error=str(error), status=400)
    return _page(request, project, trial=trial)


urlpatterns = [
    path("<slug:slug>/llm/", llm_models, name="llm-models"),
    path("<slug:slug>/llm/test/", test_llm_model, name="llm-test"),
]
