"""Results of a project: the leaderboard, the IRR results, and releases.

Each result page renders the dict of ``evaluation.results`` that its JSON download gives, and its
plots are the PNGs computed with it. At the pages' defaults they are the project's stored results
(``evaluation.stored_results``), recomputed in the background when judgments change; the page says
when they were computed, whether newer judgments wait, and offers "recompute now".
"""
from __future__ import annotations

import json

from django.contrib import messages
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from evaluation.results import METHODS, SOURCES, category_table
from evaluation.stored_results import ResultsComputing, recompute_now, stored_irr, stored_leaderboard
from kernel.errors import ServiceError
from projects.errors import ReleaseExists
from quality.selectors import worker_labels
from releases_app.services import make_release, open_release_file, release_archive, release_folder

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..forms import IRRQuery, LeaderboardQuery, ReleaseForm, cleaned_query


def _json_download(data: dict, *, filename: str) -> HttpResponse:
    response = HttpResponse(json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n",
                            content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _png(content: bytes) -> HttpResponse:
    response = HttpResponse(content, content_type="image/png")
    response["Cache-Control"] = "private, max-age=300"
    return response


def _ready(served):
    """The result of a download or plot; refused while it is computed for the first time."""
    if served.result is None:
        raise ResultsComputing("These results are being computed; try again in a moment.")
    return served.result


def _leaderboard_for(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(LeaderboardQuery, request.GET)
    return project, query, stored_leaderboard(project=project, **query)


@researcher_required
def results(request, slug: str):
    project, query, served = _leaderboard_for(request, slug)
    data = served.result.data if served.result else None
    return render(request, "cockpit/results/index.html", {
        "project": project, "query": query, "served": served, "board": data,
        "categories": category_table(data) if data else None,
        "plots": sorted(served.result.plots) if served.result else [], "parameters": urlencode(query),
        "sources": SOURCES, "methods": METHODS, "cockpit_section": "results",
        # The field's bounds in the browser are the server's (the query form's).
        "max_bootstrap": LeaderboardQuery.base_fields["bootstrap"].max_value,
    })


@researcher_required
def leaderboard_json(request, slug: str):
    project, query, served = _leaderboard_for(request, slug)
    return _json_download(_ready(served).data,
                          filename=f"{project.slug}-leaderboard-{query['source']}-{query['method']}.json")


@researcher_required
def leaderboard_plot(request, slug: str, name: str):
    _project, _query, served = _leaderboard_for(request, slug)
    return _png(_ready(served).plot(name))


def _irr_for(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(IRRQuery, request.GET)
    return project, query, stored_irr(project=project, **query)


# Kept items listed on the IRR page (a project may keep tens of thousands); the JSON has every one.
KEPT_ITEMS_SHOWN = 200


@researcher_required
def irr_page(request, slug: str):
    project, query, served = _irr_for(request, slug)
    data = served.result.data if served.result else None
    kept_all = [item for item in data["items"] if item["kept"]] if data else []
    # The page lists the first kept items; the JSON download holds them all.
    kept = kept_all[:KEPT_ITEMS_SHOWN]
    # The report names annotators by worker id; the page names them as everywhere else.
    labels = worker_labels(id for item in kept for id in item["best_pair"] or [])
    kept = [{**item, "best_pair_labels": [labels.get(id, str(id)) for id in item["best_pair"] or []]} for item in kept]
    return render(request, "cockpit/results/irr.html", {
        "project": project, "query": query, "served": served, "report": data, "parameters": urlencode(query),
        "kept_items": kept, "kept_total": len(kept_all),
        "plots": sorted(served.result.plots) if served.result else [],
        "cockpit_section": "results",
    })


@researcher_required
def irr_json(request, slug: str):
    project, _query, served = _irr_for(request, slug)
    return _json_download(_ready(served).data, filename=f"{project.slug}-irr.json")


@researcher_required
def irr_plot(request, slug: str, name: str):
    _project, _query, served = _irr_for(request, slug)
    return _png(_ready(served).plot(name))


# Where "recompute now" returns to: the page whose button it was.
RECOMPUTE_RETURNS = {"results": "cockpit:results", "irr": "cockpit:irr"}


@researcher_required
@require_POST
def recompute(request, slug: str):
    """"Recompute now": every stored result of the project, by any of its researchers."""
    project = project_for(request, slug)
    queued = recompute_now(project=project)
    messages.success(request, "The results are being recomputed; reload the page in a moment." if queued
                     else "The results were recomputed.")
    back = RECOMPUTE_RETURNS.get(request.POST.get("page"), "cockpit:results")
    return redirect(back, slug=project.slug)


@researcher_required
@require_http_methods(["GET", "POST"])
def releases(request, slug: str):
    project = project_for(request, slug)
    form = ReleaseForm(request.POST or None)
    status = 400
    if request.method == "POST":
        project = owned_project_for(request, slug)
        if form.is_valid():
            name, version = form.cleaned_data["name"], form.cleaned_data["version"]
            try:
                release = make_release(project=project, name=name, version=version, created_by=request.user,
                                       out_dir=release_folder(project=project, name=name, version=version))
            except ReleaseExists as error:  # shown at the version typed, the form kept
                form.add_error("version", error.message)
                status = error.status_code
            except ServiceError as error:
                form.add_error(None, error.message)
                status = error.status_code
            else:
                messages.success(request, f"Release {release.name} {release.version} made.")
                return redirect("cockpit:releases", slug=project.slug)
    return render(request, "cockpit/results/releases.html", {
        "project": project, "releases": project.releases.all(), "form": form,
        "can_release": is_owner(request, project), "cockpit_section": "releases",
    }, status=status if form.errors else 200)


def _release_of(request, slug: str, release_id: int):
    """The release of a project the researcher may read, or 404."""
    release = project_for(request, slug).releases.filter(pk=release_id).first()
    if release is None:
        raise Http404("No such release in this project.")
    return release


@researcher_required
def release_download(request, slug: str, release_id: int, relative: str):
    release = _release_of(request, slug, release_id)
    handle = open_release_file(release=release, relative=relative)
    return FileResponse(handle, as_attachment=True,
                        filename=f"{release.name}-{release.version}-{relative.rsplit('/', 1)[-1]}")


@researcher_required
def release_archive_download(request, slug: str, release_id: int):
    """The whole release as one zip file, unpacking to the release's folder."""
    release = _release_of(request, slug, release_id)
    return FileResponse(release_archive(release=release), as_attachment=True,
                        filename=f"{release.name}-{release.version}.zip", content_type="application/zip")


urlpatterns = [
    path("<slug:slug>/results/", results, name="results"),
    path("<slug:slug>/results/leaderboard.json", leaderboard_json, name="leaderboard-json"),
    path("<slug:slug>/results/leaderboard-<slug:name>.png", leaderboard_plot, name="leaderboard-plot"),
    path("<slug:slug>/results/recompute/", recompute, name="results-recompute"),
    path("<slug:slug>/results/irr/", irr_page, name="irr"),
    path("<slug:slug>/results/irr.json", irr_json, name="irr-json"),
    path("<slug:slug>/results/irr-<slug:name>.png", irr_plot, name="irr-plot"),
    path("<slug:slug>/releases/", releases, name="releases"),
    path("<slug:slug>/releases/<int:release_id>/files/<path:relative>", release_download, name="release-file"),
    path("<slug:slug>/releases/<int:release_id>.zip", release_archive_download, name="release-archive"),
]
