"""Rounds of a project: the list, the builder, launching and the round page.

Owners build, launch and change rounds; collaborators may look. The services do the work: the
round builder (``annotation.round_builder``) plans and creates items, ``annotation.services`` owns
the round's status, ``providers.services`` and ``providers.dry_run`` publish, cost and rehearse.
"""
from __future__ import annotations

from django.contrib import messages
from django.core import signing
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils import translation
from django.views.decorators.http import require_http_methods, require_POST

from annotation import round_builder
from annotation.forms import ConsentTextForm
from annotation.models import CollectionRound, WorkItem
from annotation.rule_labels import describe_rules
from annotation.samplers import SamplerError
from annotation.selectors import items_without_eligible_worker, round_progress
from annotation.services.engine import task_preview
from annotation.services.rounds import allowed_actions, open_round, widen_eligibility
from annotation.task_types import get_task_type
from kernel.errors import ServiceError
from providers import services as provider_services
from providers.dry_run import rehearse

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..errors import DryRunRequired
from ..forms import (CloneRoundForm, ConfirmPublishForm, ExtendRoundForm, PublishForm, RoundSettingsForm,
                     WidenEligibilityForm)

ITEMS_PER_PAGE = 25
DRY_RUN_SALT = "cockpit.rounds.dry-run"
# A dry run vouches for publishing the round as it was for this long.
DRY_RUN_MAX_AGE_SECONDS = 3600


def _round_of(project, round_id: int) -> CollectionRound:
    return get_object_or_404(project.rounds, pk=round_id)


def _owned_round(request, slug: str, round_id: int):
    """(project, round) for a change: owners only (403 for collaborators, 404 for strangers)."""
    project = owned_project_for(request, slug)
    return project, _round_of(project, round_id)


def _refused_form(request, project, round, status=400, **forms):
    """The round page again with the refused form and its errors (400, or the refusal's own status)."""
    return render(request, "cockpit/rounds/detail.html", _round_context(request, project, round, **forms),
                  status=status)


@researcher_required
def round_list(request, slug: str):
    project = project_for(request, slug)
    rounds = [
        {"round": round, "progress": round_progress(round=round)}
        for round in project.rounds.order_by("-created_at", "-id")
    ]
    return render(request, "cockpit/rounds/list.html", {"project": project, "rounds": rounds, "cockpit_section": "rounds",
                                                        "can_build": is_owner(request, project)})


# --- the builder ------------------------------------------------------------------------------------


def _kind(request) -> tuple | None:
    """(task type, source) chosen by ``kind=<task type>:<source>``; None before a choice."""
    kind = request.POST.get("kind") or request.GET.get("kind")
    if not kind:
        return None
    task_type, _sep, source = str(kind).partition(":")
    handler = get_task_type(task_type)
    return handler, handler.source(source)


@researcher_required
@require_http_methods(["GET", "POST"])
def round_new(request, slug: str):
    project = owned_project_for(request, slug)
    context = {"project": project, "cockpit_section": "rounds"}
    chosen = _kind(request)
    if chosen is None:
        return render(request, "cockpit/rounds/new.html",
                      {**context, "choices": round_builder.sources_by_task_type()})
    handler, source = chosen
    data = request.POST.copy() if request.method == "POST" else None
    settings_form = RoundSettingsForm(data, prefix="round", task_type=handler.key)
    params_form = source.params_form(data, prefix="source")
    context.update({"handler": handler, "source": source, "kind": f"{handler.key}:{source.key}",
                    "settings_form": settings_form, "params_form": params_form})
    if request.method == "POST" and settings_form.is_valid() and params_form.is_valid():
        try:
            done = _plan_or_create(request, project, handler, source, settings_form, params_form, data, context)
        except (round_builder.BadItemSource, round_builder.BadRoundSettings, SamplerError) as refused:
            # The source's or the settings' refusal is form validation: shown on the form, input kept.
            context["params_form"].add_error(None, refused.message)
            context.pop("plan", None)
        else:
            if done is not None:
                return done
    status = 400 if request.method == "POST" and "plan" not in context else 200
    return render(request, "cockpit/rounds/new.html", context, status=status)


def _plan_or_create(request, project, handler, source, settings_form, params_form, data, context):
    """Create the draft round (the redirect to it), or put the plan and its cost in ``context`` (None)."""
    settings = settings_form.round_settings()
    if request.POST.get("action") == "create":
        round, plan = round_builder.create_round_from_source(
            project=project, created_by=request.user, settings=settings, source=source.key,
            params=params_form.cleaned_data, gold_answers=settings_form.cleaned_data["gold_answers"])
        messages.success(request, f"Draft round '{round.name}' created with {len(plan)} items.")
        return redirect("cockpit:round", slug=project.slug, round_id=round.pk)
    plan = round_builder.plan_items(project=project, task_type=handler.key, source=source.key,
                                    params=params_form.cleaned_data, language=settings["language"])
    if "seed" in plan.params:
        # The drawn seed goes back into the form, so "Create draft" makes exactly these items.
        data[params_form.add_prefix("seed")] = str(plan.params["seed"])
        context["params_form"] = source.params_form(data, prefix="source")
        context["params_form"].is_valid()
    gold = round_builder.gold_by_index(settings_form.cleaned_data["gold_answers"], items=len(plan))
    settings.pop("name")
    cost = provider_services.estimate_plan_cost(
        round=CollectionRound(**settings), items=len(plan),
        provider_name=settings_form.cleaned_data["provider"],
        expected_seconds=settings_form.cleaned_data["expected_seconds"])
    context.update({"plan": plan, "cost": cost, "gold_items": len(gold)})
    return None


# --- editing a draft, cloning a round ---------------------------------------------------------------

# The qualification rules the settings form sets; a draft's other rules are kept when it is edited.
FORM_RULES = (*RoundSettingsForm.QUALIFICATION_FIELDS, "providers")


@researcher_required
@require_http_methods(["GET", "POST"])
def round_edit(request, slug: str, round_id: int):
    """A draft's settings and items, through the builder's form and checks (``round_builder.edit_draft``).
    Only a draft: the round page says why otherwise (409), and the edit form keeps a refused post."""
    project, round = _owned_round(request, slug, round_id)
    if request.method == "GET" and "edit" not in allowed_actions(round):
        return _refused_form(request, project, round, status=409, edit_refusal=_not_a_draft(round))
    handler = get_task_type(round.task_type)
    data = request.POST.copy() if request.method == "POST" else None
    settings_form = RoundSettingsForm(data, prefix="round", task_type=handler.key,
                                      initial=RoundSettingsForm.initial_of(round))
    context = {"project": project, "cockpit_section": "rounds", "round": round, "handler": handler,
               "settings_form": settings_form, "sources": handler.item_sources, "editing": True,
               "item_count": round.items.count()}
    chosen = request.POST.get("source") or request.GET.get("source")
    source = handler.source(chosen) if chosen else None
    params_form = source.params_form(data, prefix="source") if source else None
    context.update({"source": source, "params_form": params_form})
    if request.method == "GET":
        return render(request, "cockpit/rounds/edit.html", context)
    forms_valid = settings_form.is_valid() and (params_form is None or params_form.is_valid())
    if forms_valid:
        try:
            done = _edit_or_preview(request, project, round, handler, source, settings_form, params_form, data,
                                    context)
        except (round_builder.BadItemSource, round_builder.BadRoundSettings, SamplerError) as refused:
            settings_form.add_error(None, refused.message)
            context.pop("plan", None)
        except ServiceError as refused:  # the round is no longer a draft: said on the form, input kept
            settings_form.add_error(None, refused.message)
            return render(request, "cockpit/rounds/edit.html", context, status=refused.status_code)
        else:
            if done is not None:
                return done
    status = 200 if forms_valid and "plan" in context else 400
    return render(request, "cockpit/rounds/edit.html", context, status=status)


def _not_a_draft(round: CollectionRound) -> str:
    return (f"Only a draft round can be edited; this one is {round.get_status_display().lower()}. "
            "Clone it to run it again with other settings.")


def _edit_or_preview(request, project, round, handler, source, settings_form, params_form, data, context):
    """Save the draft (the redirect to it), or put the plan of the new items and its cost in ``context``."""
    settings = settings_form.round_settings()
    kept = {key: value for key, value in (round.qualification_rules or {}).items() if key not in FORM_RULES}
    settings["qualification_rules"] = {**kept, **settings["qualification_rules"]}
    gold_answers = settings_form.cleaned_data["gold_answers"]
    if request.POST.get("action") != "preview" or source is None:
        edited, plan = round_builder.edit_draft(
            round=round, settings=settings, source=source.key if source else None,
            params=params_form.cleaned_data if params_form else None, gold_answers=gold_answers)
        items = f" Its items were replaced: {len(plan)} items." if plan is not None else ""
        messages.success(request, f"Draft round '{edited.name}' saved.{items}")
        return redirect("cockpit:round", slug=project.slug, round_id=round.pk)
    if "edit" not in allowed_actions(round):  # a preview of items the round can no longer take
        raise round_builder.BadRoundSettings(_not_a_draft(round))
    plan = round_builder.plan_items(project=project, task_type=handler.key, source=source.key,
                                    params=params_form.cleaned_data, language=settings["language"])
    if "seed" in plan.params:
        data[params_form.add_prefix("seed")] = str(plan.params["seed"])
        context["params_form"] = source.params_form(data, prefix="source")
        context["params_form"].is_valid()
    gold = round_builder.gold_by_index(gold_answers, items=len(plan))
    settings.pop("name")
    cost = provider_services.estimate_plan_cost(
        round=CollectionRound(**settings), items=len(plan), provider_name=settings_form.cleaned_data["provider"],
        expected_seconds=settings_form.cleaned_data["expected_seconds"])
    context.update({"plan": plan, "cost": cost, "gold_items": len(gold)})
    return None


@researcher_required
@require_POST
def round_clone(request, slug: str, round_id: int):
    """A new draft with this round's settings and items (``round_builder.clone``)."""
    project, round = _owned_round(request, slug, round_id)
    form = CloneRoundForm(request.POST)
    if not form.is_valid():
        return _refused_form(request, project, round, clone_form=form)
    name = form.cleaned_data["name"] or f"{round.name} (copy)"[:CollectionRound._meta.get_field("name").max_length]
    try:
        copy = round_builder.clone(round=round, created_by=request.user, name=name)
    except ServiceError as refused:
        form.add_error(None, refused.message)
        return _refused_form(request, project, round, status=refused.status_code, clone_form=form)
    messages.success(request, f"Draft round '{copy.name}' created: a copy of '{round.name}' with "
                              f"{copy.items.count()} items.")
    return redirect("cockpit:round", slug=project.slug, round_id=copy.pk)


# --- the round page and its controls --------------------------------------------------------------


def _round_context(request, project, round: CollectionRound, **extra) -> dict:
    items = Paginator(round_builder.items_with_targets(round), ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    provider = request.GET.get("provider")
    return {
        "project": project,
        "cockpit_section": "rounds",
        "round": round,
        "handler": get_task_type(round.task_type),
        "rule_labels": describe_rules(round.qualification_rules, language=round.language),
        "progress": round_progress(round=round),
        "balance": round_builder.round_balance(round=round),
        "items_page": items,
        "items": round_builder.describe_items(round=round, items=items.object_list),
        "actions": allowed_actions(round),
        "publications": round.publications.order_by("provider"),
        "can_launch": is_owner(request, project),
        "can_publish": round.status in (CollectionRound.Status.DRAFT, CollectionRound.Status.OPEN),
        "extend_form": ExtendRoundForm(),
        "widen_form": extra.pop("widen_form", None) or WidenEligibilityForm(round=round),
        "stuck_items": round_builder.describe_items(round=round, items=items_without_eligible_worker(round=round)),
        "publish_form": PublishForm(initial={"provider": provider} if provider else None),
        "consent_form": ConsentTextForm(instance=round),
        "clone_form": extra.pop("clone_form", None) or CloneRoundForm(),
        "can_edit": "edit" in allowed_actions(round),
        **extra,
    }


@researcher_required
def round_detail(request, slug: str, round_id: int):
    project = project_for(request, slug)
    round = _round_of(project, round_id)
    return render(request, "cockpit/rounds/detail.html", _round_context(request, project, round))


# Status changes a button makes; each calls the one service that owns it.
STATUS_ACTIONS = {
    "open": ("opened", lambda round: open_round(round=round)),
    "pause": ("paused: no new tasks are handed out", lambda round: provider_services.pause_round(round=round)),
    "resume": ("resumed", lambda round: provider_services.resume_round(round=round)),
    "close": ("closed; its tasks at the providers were stopped", lambda round: provider_services.close_round(round=round)),
    "cancel": ("cancelled; its tasks at the providers were stopped",
               lambda round: provider_services.cancel_round(round=round)),
}


@researcher_required
@require_POST
def round_status(request, slug: str, round_id: int, action: str):
    project, round = _owned_round(request, slug, round_id)
    done, change = STATUS_ACTIONS[action]
    change(round)
    messages.success(request, f"Round {done}.")
    return redirect("cockpit:round", slug=project.slug, round_id=round.pk)


@researcher_required
@require_POST
def round_extend(request, slug: str, round_id: int):
    project, round = _owned_round(request, slug, round_id)
    form = ExtendRoundForm(request.POST)
    if not form.is_valid():
        return _refused_form(request, project, round, extend_form=form)
    provider_services.extend_round(round=round, **form.cleaned_data)
    messages.success(request, "Round extended.")
    return redirect("cockpit:round", slug=project.slug, round_id=round.pk)


@researcher_required
@require_POST
def round_widen(request, slug: str, round_id: int):
    """Drop qualification rules so more workers may take the round's tasks (``widen_eligibility``)."""
    project, round = _owned_round(request, slug, round_id)
    form = WidenEligibilityForm(request.POST, round=round)
    if not form.is_valid():
        return _refused_form(request, project, round, widen_form=form)
    widen_eligibility(round=round, rules=form.cleaned_data["rules"])
    messages.success(request, f"Eligibility widened: {', '.join(form.cleaned_data['rules'])} dropped.")
    return redirect("cockpit:round", slug=project.slug, round_id=round.pk)


@researcher_required
@require_POST
def round_consent(request, slug: str, round_id: int):
    """The round's study information and consent text (``annotation.consent`` saves it)."""
    project, round = _owned_round(request, slug, round_id)
    form = ConsentTextForm(request.POST, instance=round)
    if not form.is_valid():
        return _refused_form(request, project, round, consent_form=form)
    form.save()
    messages.success(request, "Study information saved." if form.cleaned_data["consent_text"]
                     else "Study information removed: workers start without it.")
    return redirect("cockpit:round", slug=project.slug, round_id=round.pk)


def _dry_run_claims(round: CollectionRound, provider: str) -> dict:
    """What a dry run vouches for: this round, as it is now, on this provider."""
    return {"round": round.pk, "provider": provider, "items": round.items.count(), "status": round.status}


def _dry_run_token(round: CollectionRound, provider: str) -> str:
    return signing.dumps(_dry_run_claims(round, provider), salt=DRY_RUN_SALT)


def _check_dry_run_token(token: str, round: CollectionRound, provider: str) -> None:
    try:
        seen = signing.loads(token, salt=DRY_RUN_SALT, max_age=DRY_RUN_MAX_AGE_SECONDS)
    except signing.BadSignature:
        raise DryRunRequired("Run the dry run first (or again: its result is over an hour old).") from None
    if seen != _dry_run_claims(round, provider):
        raise DryRunRequired("The round or the provider changed since the dry run; run it again before publishing.")


@researcher_required
@require_POST
def round_dry_run(request, slug: str, round_id: int):
    project, round = _owned_round(request, slug, round_id)
    form = PublishForm(request.POST)
    if not form.is_valid():
        return _refused_form(request, project, round, publish_form=form)
    provider, seconds = form.cleaned_data["provider"], form.cleaned_data["expected_seconds"]
    try:
        report = rehearse(round=round, provider_name=provider, median_seconds=float(seconds))
        cost = provider_services.estimate_plan_cost(round=round, items=None, provider_name=provider,
                                                    expected_seconds=seconds)
    except ServiceError as error:  # the rehearsal's refusal, at the publish form, its choices kept
        form.add_error(None, error.message)
        return _refused_form(request, project, round, status=error.status_code, publish_form=form)
    # A round with no work left publishes nothing: no confirmation to offer.
    confirm_form = None if report.nothing_to_publish else ConfirmPublishForm(initial={
        "provider": provider, "expected_seconds": seconds, "dry_run": _dry_run_token(round, provider)})
    return render(request, "cockpit/rounds/detail.html", _round_context(
        request, project, round, publish_form=form, dry_run=report, dry_run_cost=cost, confirm_form=confirm_form))


@researcher_required
@require_POST
def round_publish(request, slug: str, round_id: int):
    project, round = _owned_round(request, slug, round_id)
    form = ConfirmPublishForm(request.POST)
    if not form.is_valid():
        return _refused_form(request, project, round, confirm_form=form)
    provider = form.cleaned_data["provider"]
    try:
        _check_dry_run_token(form.cleaned_data["dry_run"], round, provider)
        result = provider_services.publish_round(round=round, provider_name=provider,
                                                 expected_seconds=form.cleaned_data["expected_seconds"])
    except ServiceError as error:  # shown at the dry-run form, with the provider and time chosen
        publish_form = PublishForm({"provider": provider, "expected_seconds": form.cleaned_data["expected_seconds"]})
        publish_form.is_valid()
        publish_form.add_error(None, error.message)
        return _refused_form(request, project, round, status=error.status_code, publish_form=publish_form)
    messages.success(request, f"Published on {provider}: {result.tasks_created} task(s) created, "
                              f"{result.tasks_existing} already there.")
    return redirect("cockpit:round", slug=project.slug, round_id=round.pk)


@researcher_required
def item_preview(request, slug: str, round_id: int, item_id: int):
    """The item's task page as a worker sees it; nothing is reserved and submitting is disabled."""
    project = project_for(request, slug)
    round = _round_of(project, round_id)
    item = get_object_or_404(WorkItem.objects.select_related("round"), pk=item_id, round=round)
    with translation.override(round.language):
        assignment, task = task_preview(item=item)
        return render(request, "cockpit/rounds/preview.html", {
            "project": project, "round": round, "item": item, "assignment": assignment, "task": task,
            "handler": get_task_type(round.task_type), "seconds_left": round.time_limit_seconds})


urlpatterns = [
    path("<slug:slug>/rounds/", round_list, name="rounds"),
    path("<slug:slug>/rounds/new/", round_new, name="round-new"),
    path("<slug:slug>/rounds/<int:round_id>/", round_detail, name="round"),
    path("<slug:slug>/rounds/<int:round_id>/edit/", round_edit, name="round-edit"),
    path("<slug:slug>/rounds/<int:round_id>/clone/", round_clone, name="round-clone"),
    path("<slug:slug>/rounds/<int:round_id>/extend/", round_extend, name="round-extend"),
    path("<slug:slug>/rounds/<int:round_id>/widen/", round_widen, name="round-widen"),
    path("<slug:slug>/rounds/<int:round_id>/consent/", round_consent, name="round-consent"),
    path("<slug:slug>/rounds/<int:round_id>/dry-run/", round_dry_run, name="round-dry-run"),
    path("<slug:slug>/rounds/<int:round_id>/publish/", round_publish, name="round-publish"),
    path("<slug:slug>/rounds/<int:round_id>/items/<int:item_id>/preview/", item_preview, name="round-item-preview"),
] + [
    path(f"<slug:slug>/rounds/<int:round_id>/{action}/", round_status, {"action": action}, name=f"round-{action}")
    for action in STATUS_ACTIONS
]
