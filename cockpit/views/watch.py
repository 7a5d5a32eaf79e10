"""Watching crowd work: one round, and the open rounds of a project; each page has its JSON twin.

The numbers are ``annotation.watch``'s; the page shows the same dict the JSON gives. A round's agreement
so far is the stored one (``evaluation.stored_results``), recomputed with the results when judgments change.
"""
from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.urls import path

from annotation.watch import project_watch, round_watch
from evaluation.stored_results import stored_agreement

from ..access import project_for, researcher_required
from ..forms import WatchQuery, cleaned_query


def _round_of(project, round_id: int):
    round = project.rounds.filter(pk=round_id).first()
    if round is None:
        raise Http404("No such round in this project.")
    return round


def _json(data: dict, *, filename: str) -> JsonResponse:
    response = JsonResponse(data, encoder=DjangoJSONEncoder, json_dumps_params={"ensure_ascii": False, "indent": 2})
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@researcher_required
def round_watch_page(request, slug: str, round_id: int):
    project = project_for(request, slug)
    round = _round_of(project, round_id)
    query = cleaned_query(WatchQuery, request.GET)
    watch = round_watch(round=round, coverage_target=query["target"], agreement=stored_agreement)
    peak = max((row["submissions"] for row in watch["throughput"]), default=0)
    return render(request, "cockpit/watch/round.html", {
        "project": project, "round": round, "watch": watch, "peak": peak, "query": query,
        "cockpit_section": "watch",
    })


@researcher_required
def round_watch_json(request, slug: str, round_id: int):
    project = project_for(request, slug)
    round = _round_of(project, round_id)
    query = cleaned_query(WatchQuery, request.GET)
    return _json(round_watch(round=round, coverage_target=query["target"], agreement=stored_agreement),
                 filename=f"{project.slug}-round-{round.pk}-watch.json")


@researcher_required
def project_watch_page(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(WatchQuery, request.GET)
    watch = project_watch(project=project, coverage_target=query["target"], agreement=stored_agreement)
    peak = max((row["submissions"] for row in watch["throughput"]), default=0)
    return render(request, "cockpit/watch/project.html", {
        "project": project, "watch": watch, "peak": peak, "query": query, "cockpit_section": "watch",
    })


@researcher_required
def project_watch_json(request, slug: str):
    project = project_for(request, slug)
    query = cleaned_query(WatchQuery, request.GET)
    return _json(project_watch(project=project, coverage_target=query["target"], agreement=stored_agreement), filename=f"{project.slug}-watch.json")


urlpatterns = [
    path("<slug:slug>/watch/", project_watch_page, name="watch"),
    path("<slug:slug>/watch.json", project_watch_json, name="watch-json"),
    path("<slug:slug>/rounds/<int:round_id>/watch/", round_watch_page, name="round-watch"),
    path("<slug:slug>/rounds/<int:round_id>/watch.json", round_watch_json, name="round-watch-json"),
]
