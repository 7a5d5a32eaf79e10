"""Who may do what in a project: members read, owners manage; for services, pages and the API."""
from __future__ import annotations

from rest_framework.permissions import BasePermission

from .errors import ProjectNotFound, ProjectPermissionDenied
from .models import Membership, Project
from .selectors import project_of, role_of


def require_member(*, user, project: Project) -> str:
    """The user's role in the project; refuses non-members with "not found" (the project stays hidden)."""
    role = role_of(user=user, project=project)
    if role is None:
        raise ProjectNotFound(f"No project '{project.slug}' among yours.")
    return role


def require_owner(*, user, project: Project) -> None:
    if require_member(user=user, project=project) != Membership.Role.OWNER:
        raise ProjectPermissionDenied(f"Only an owner of '{project.slug}' may do this.")


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
