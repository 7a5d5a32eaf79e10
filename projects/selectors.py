"""Reads scoped to the projects a user belongs to.

A researcher sees only the projects they are a member of (superusers see all); workers, who are
members of none, see nothing. Every researcher-facing read goes through ``projects_for_user``;
each app scopes its own rows with it (``datasets_app.selectors``, ``annotation.selectors``).
"""
from __future__ import annotations

from django.db.models import QuerySet

from .errors import ProjectNotFound
from .models import Membership, Project, Release
from .scoping import PROJECT_PATHS


def projects_for_user(user) -> QuerySet[Project]:
    if user is None or not user.is_authenticated or not user.is_active:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def get_project_for_user(*, user, slug: str) -> Project:
    """The project, if the user may see it; otherwise the same "not found" as for a missing one,
    so a member of another project cannot learn which slugs exist."""
    project = projects_for_user(user).filter(slug=slug).first()
    if project is None:
        raise ProjectNotFound(f"No project '{slug}' among yours.")
    return project


def get_project(*, slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise ProjectNotFound(f"No project with slug '{slug}'.")
    return project


def role_of(*, user, project: Project) -> str | None:
    if user is None or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.Role.OWNER
    return Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()


def releases_for_user(user) -> QuerySet[Release]:
    return Release.objects.filter(project__in=projects_for_user(user))


def project_of(obj) -> Project | None:
    """The project that owns a row of the researchers' data (a family, image, instance, model output,
    review set, round, work item, assignment, release...), by its model's path in ``PROJECT_PATHS``."""
    if isinstance(obj, Project):
        return obj
    path = PROJECT_PATHS.get(getattr(getattr(obj, "_meta", None), "label", None))
    if path is None:
        raise TypeError(f"{type(obj).__name__} has no project")
    for step in path[0].split("__"):
        obj = getattr(obj, step)
    return obj
