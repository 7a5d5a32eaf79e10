"""Who may do what in a project: members read, owners manage; for services, pages and the API."""
from __future__ import annotations

from django.conf import settings
from rest_framework.permissions import BasePermission

from .errors import ProjectNotFound, ProjectPermissionDenied
from .models import Membership, Project
from .selectors import project_of, role_of


def is_researcher(user) -> bool:
    """Researchers (the researchers group, or superusers) use the cockpit and the researcher API."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and (user.is_superuser or user.groups.filter(name=settings.RESEARCHER_GROUP).exists())
    )


def require_member(*, user, project: Project) -> str:
    """The user's role in the project; refuses non-members with "not found" (the project stays hidden)."""
    role = role_of(user=user, project=project)
    if role is None:
        raise ProjectNotFound(f"No project '{project.slug}' among yours.")
    return role


def require_owner(*, user, project: Project) -> None:
    if require_member(user=user, project=project) != Membership.Role.OWNER:
        raise ProjectPermissionDenied(f"Only an owner of '{project.slug}' may do this.")


class IsResearcher(BasePermission):
    """DRF: only researchers; a worker's session or token gets 403 on researcher endpoints."""

    message = "Only researchers may use this API; ask an administrator to add you to the researchers group."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class IsProjectMember(BasePermission):
    """DRF: authenticated members may read an object of their project; owners may change it.

    Views scope their querysets with ``projects.selectors.*_for_user`` so non-members get 404;
    this check is the second lock on each object.
    """

    message = "You are not a member of this project."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj) -> bool:
        project = project_of(obj)
        if project is None:
            return False
        role = role_of(user=request.user, project=project)
        if role is None:
            return False
        return request.method in ("GET", "HEAD", "OPTIONS") or role == Membership.Role.OWNER
