"""The project dashboard: what the project holds and where each piece stands."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from ..access import project_for, researcher_required


@researcher_required
def project_dashboard(request, slug: str):
    project = project_for(request, slug)
    return render(request, "cockpit/board.html", {"project": project, "cockpit_section": "board"})


urlpatterns = [
    path("<slug:slug>/", project_dashboard, name="project"),
]
