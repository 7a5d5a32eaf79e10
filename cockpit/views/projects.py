"""Projects: the researcher's list, a new project, members. The dashboard is in ``board``."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from kernel.errors import ServiceError
from projects.accounts import invite_researcher
from projects.errors import ProjectConflict
from projects.models import Membership
from projects.selectors import projects_for_user
from projects.services import create_project, remove_member, set_member

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..forms import MemberForm, NewResearcherForm, ProjectForm


@researcher_required
def project_list(request):
    projects = projects_for_user(request.user).prefetch_related("memberships")
    return render(request, "cockpit/project_list.html", {"projects": projects})


@researcher_required
@require_http_methods(["GET", "POST"])
def project_new(request):
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = create_project(owner=request.user, **form.cleaned_data)
        messages.success(request, f"Project '{project.name}' created.")
        return redirect("cockpit:project", slug=project.slug)
    return render(request, "cockpit/project_new.html", {"form": form})


@researcher_required
@require_http_methods(["GET", "POST"])
def project_members(request, slug: str):
    project = project_for(request, slug)
    form = MemberForm(request.POST or None)
    if request.method == "POST":
        project = owned_project_for(request, slug)
        if "remove" in request.POST:
            membership = project.memberships.filter(pk=request.POST.get("remove")).select_related("user").first()
            if membership is not None:
                try:
                    remove_member(project=project, user=membership.user)
                except ProjectConflict as refused:  # the last owner stays: said on the members page
                    messages.error(request, f"{membership.user.get_username()} was not removed: {refused.message}")
                else:
                    messages.success(request, f"{membership.user.get_username()} removed.")
            return redirect("cockpit:members", slug=slug)
        if form.is_valid():
            try:
                set_member(project=project, user=form.cleaned_data["username"], role=form.cleaned_data["role"])
            except ProjectConflict as refused:  # demoting the last owner: a form error, input kept
                form.add_error("role", refused.message)
            else:
                messages.success(request,
                                 f"{form.cleaned_data['username'].get_username()} is now {form.cleaned_data['role']}.")
                return redirect("cockpit:members", slug=slug)
    memberships = project.memberships.select_related("user")
    return render(
        request,
        "cockpit/members.html",
        {"project": project, "memberships": memberships, "form": form, "invite_form": NewResearcherForm(),
         "can_manage": is_owner(request, project), "owner_role": Membership.Role.OWNER,
         "cockpit_section": "members"},
        status=400 if request.method == "POST" else 200,
    )


@researcher_required
@never_cache
@require_POST
def invite_member(request, slug: str):
    """A researcher without an account: made a member, with a one-time link shown once, here."""
    project = owned_project_for(request, slug)
    form = NewResearcherForm(request.POST)
    link = None
    if form.is_valid():
        try:
            _user, link_path = invite_researcher(project=project, by=request.user, **form.cleaned_data)
        except ServiceError as refused:
            form.add_error("username", refused.message)
        else:
            link = request.build_absolute_uri(link_path)
    return render(request, "cockpit/members.html", {
        "project": project, "memberships": project.memberships.select_related("user"), "form": MemberForm(),
        "invite_form": NewResearcherForm() if link else form, "new_link": link,
        "new_account": form.cleaned_data.get("username") if link else None,
        "can_manage": True, "owner_role": Membership.Role.OWNER, "cockpit_section": "members",
    }, status=200 if link else 400)


urlpatterns = [
    path("", project_list, name="projects"),
    path("new/", project_new, name="project-new"),
    path("<slug:slug>/members/", project_members, name="members"),
    path("<slug:slug>/members/invite/", invite_member, name="member-invite"),
]
