"""Who may use the cockpit: researchers (the researchers group, or superusers), and within it
only the projects they are members of. Every cockpit view goes through these helpers."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _

from kernel.errors import ServiceError

from projects.models import Membership, Project
from projects.permissions import is_researcher, require_member, require_owner
from projects.selectors import get_project_for_user

from .errors import NotAResearcher

NOT_A_RESEARCHER = _("Only researchers may use the cockpit; ask an administrator to add you to the researchers group.")


def researcher_required(view):
    """Log in first; then refuse (403) anyone who is not a researcher. A refusal the view lets
    through is shown inside the cockpit (``refused``), not on a bare page."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise NotAResearcher(str(NOT_A_RESEARCHER))
        try:
            return view(request, *args, **kwargs)
        except ServiceError as error:
            return refused(request, error, slug=kwargs.get("slug"))

    return wrapped


def back_url(request, fallback: str) -> str:
    """Where the person came from (the Referer, when it is this site's), else ``fallback``."""
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
        return referer
    return fallback


def refused(request, error: ServiceError, *, slug: str | None = None):
    """The cockpit's one page for a refusal no form could show: the message, the project's
    navigation when the researcher is one of its members, and a way back to where they were."""
    project = None
    if slug:
        try:
            project = project_for(request, slug)
        except ServiceError:
            project = None  # not theirs (or gone): no navigation to offer, the message still shows
    fallback = reverse("cockpit:project", args=[project.slug]) if project else reverse("cockpit:projects")
    return render(request, "cockpit/refused.html", {
        "project": project, "message": error.message, "back_url": back_url(request, fallback),
    }, status=error.status_code)


def project_for(request, slug: str) -> Project:
    """The project if the researcher is a member; otherwise "not found" (404), as for a missing one."""
    return get_project_for_user(user=request.user, slug=slug)


def owned_project_for(request, slug: str) -> Project:
    """The project if the researcher is an owner (403 for a collaborator, 404 for a non-member)."""
    project = project_for(request, slug)
    require_owner(user=request.user, project=project)
    return project


def role_in(request, project: Project) -> str:
    return require_member(user=request.user, project=project)


def is_owner(request, project: Project) -> bool:
    return role_in(request, project) == Membership.Role.OWNER
