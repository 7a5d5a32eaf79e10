"""Who may use the cockpit: researchers (the researchers group, or superusers), and within it
only the projects they are members of. Every cockpit view goes through these helpers."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.utils.translation import gettext_lazy as _

from projects.models import Membership, Project
from projects.permissions import is_researcher, require_member, require_owner
from projects.selectors import get_project_for_user

from .errors import NotAResearcher

NOT_A_RESEARCHER = _("Only researchers may use the cockpit; ask an administrator to add you to the researchers group.")


def researcher_required(view):
    """Log in first; then refuse (403) anyone who is not a researcher."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise NotAResearcher(str(NOT_A_RESEARCHER))
        return view(request, *args, **kwargs)

    return wrapped


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
