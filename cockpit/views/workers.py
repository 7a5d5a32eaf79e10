"""Workers who took part in a project's rounds, and a page per worker."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from ..access import project_for, researcher_required


@researcher_required
def worker_list(request, slug: str):
    project = project_for(request, slug)
    return render(request, "cockpit/workers/list.html", {"project": project, "cockpit_section": "workers"})


urlpatterns = [
    path("<slug:slug>/workers/", worker_list, name="workers"),
]
