"""Rounds of a project: the list, the builder, launching and the round page."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from annotation.selectors import round_progress

from ..access import project_for, researcher_required


@researcher_required
def round_list(request, slug: str):
    project = project_for(request, slug)
    rounds = [
        {"round": round, "progress": round_progress(round=round)}
        for round in project.rounds.order_by("-created_at", "-id")
    ]
    return render(request, "cockpit/rounds/list.html", {"project": project, "rounds": rounds, "cockpit_section": "rounds"})


urlpatterns = [
    path("<slug:slug>/rounds/", round_list, name="rounds"),
]
