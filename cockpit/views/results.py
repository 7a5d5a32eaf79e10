"""Results of a project: the leaderboard, the IRR results, and releases."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from ..access import project_for, researcher_required


@researcher_required
def results(request, slug: str):
    project = project_for(request, slug)
    return render(request, "cockpit/results/index.html", {"project": project, "cockpit_section": "results"})


@researcher_required
def releases(request, slug: str):
    project = project_for(request, slug)
    return render(request, "cockpit/results/releases.html", {"project": project, "releases": project.releases.all(), "cockpit_section": "releases"})


urlpatterns = [
    path("<slug:slug>/results/", results, name="results"),
    path("<slug:slug>/releases/", releases, name="releases"),
]
