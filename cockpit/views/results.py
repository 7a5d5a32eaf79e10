"""Results of a project: the leaderboard, the IRR results, and releases.

Each result page renders the dict of ``evaluation.results`` that its JSON download gives, and its
plots are the PNGs computed with it (one cache entry per parameters and data).
"""
from __future__ import annotations

import json

from django.contrib import messages
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from evaluation.results import METHODS, SOURCES, category_table, irr_results, leaderboard
from kernel.errors import ServiceError
from projects.errors import ReleaseExists
from quality.selectors import worker_labels
from releases_app.services import make_release, open_release_file, release_folder

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


def _leaderboard_for(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(LeaderboardQuery, request.GET)
    return project, query, leaderboard(project=project, **query)


@researcher_required
def results(request, slug: str):
    project, query, result = _leaderboard_for(request, slug)
    parameters = urlencode(query)
    return render(request, "cockpit/results/index.html", {
        "project": project, "query": query, "board": result.data, "categories": category_table(result.data),
        "plots": sorted(result.plots), "parameters": parameters, "sources": SOURCES, "methods": METHODS,
        "cockpit_section": "results",
        # The field's bounds in the browser are the server's (the query form's).
        "max_bootstrap": LeaderboardQuery.base_fields["bootstrap"].max_value,
    })


@researcher_required
def leaderboard_json(request, slug: str):
    project, query, result = _leaderboard_for(request, slug)
    return _json_download(result.data, filename=f"{project.slug}-leaderboard-{query['source']}-{query['method']}.json")


@researcher_required
def leaderboard_plot(request, slug: str, name: str):
    _project, _query, result = _leaderboard_for(request, slug)
    return _png(result.plot(name))


def _irr_for(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(IRRQuery, request.GET)
    return project, query, irr_results(project=project, **query)


@researcher_required
def irr_page(request, slug: str):
    project, query, result = _irr_for(request, slug)
    data = result.data
    kept = [item for item in data["items"] if item["kept"]]
    # The report names annotators by worker id; the page names them as everywhere else.
    labels = worker_labels(id for item in kept for id in item["best_pair"] or [])
    kept = [{**item, "best_pair_labels": [labels.get(id, str(id)) for id in item["best_pair"] or []]} for item in kept]
    return render(request, "cockpit/results/irr.html", {
        "project": project, "query": query, "report": data, "parameters": urlencode(query),
        "kept_items": kept, "plots": sorted(result.plots),
        "cockpit_section": "results",
    })


@researcher_required
def irr_json(request, slug: str):
    project, _query, result = _irr_for(request, slug)
    return _json_download(result.data, filename=f"{project.slug}-irr.json")


@researcher_required
def irr_plot(request, slug: str, name: str):
    _project, _query, result = _irr_for(request, slug)
    return _png(result.plot(name))


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


@researcher_required
def release_download(request, slug: str, release_id: int, relative: str):
    project = project_for(request, slug)
    release = project.releases.filter(pk=release_id).first()
    if release is None:
        raise Http404("No such release in this project.")
    handle = open_release_file(release=release, relative=relative)
    return FileResponse(handle, as_attachment=True,
                        filename=f"{release.name}-{release.version}-{relative.rsplit('/', 1)[-1]}")


urlpatterns = [
    path("<slug:slug>/results/", results, name="results"),
    path("<slug:slug>/results/leaderboard.json", leaderboard_json, name="leaderboard-json"),
    path("<slug:slug>/results/leaderboard-<slug:name>.png", leaderboard_plot, name="leaderboard-plot"),
    path("<slug:slug>/results/irr/", irr_page, name="irr"),
    path("<slug:slug>/results/irr.json", irr_json, name="irr-json"),
    path("<slug:slug>/results/irr-<slug:name>.png", irr_plot, name="irr-plot"),
    path("<slug:slug>/releases/", releases, name="releases"),
    path("<slug:slug>/releases/<int:release_id>/files/<path:relative>", release_download, name="release-file"),
]
