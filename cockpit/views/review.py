"""The review queue: submissions as the worker saw them, approved or rejected through the one review path."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from ..access import project_for, researcher_required


@researcher_required
def review_queue(request, slug: str):
    project = project_for(request, slug)
    return render(request, "cockpit/review/queue.html", {"project": project, "cockpit_section": "review"})


urlpatterns = [
    path("<slug:slug>/review/", review_queue, name="review"),
]
