"""Reads scoped to the projects a user belongs to.

A researcher sees only the projects they are a member of (superusers see all); workers, who are
members of none, see nothing. Every researcher-facing read goes through ``projects_for_user``.
"""
from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Assignment, CollectionRound, WorkItem
from datasets_app.models import Image, Instance, InstructionFamily, ModelOutput, ReviewSet

from .errors import ProjectNotFound
from .models import Membership, Project, Release


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


def families_for_user(user):
    return InstructionFamily.objects.filter(project__in=projects_for_user(user))


def instances_for_user(user):
    return Instance.objects.filter(family__project__in=projects_for_user(user))


def model_outputs_for_user(user):
    return ModelOutput.objects.filter(instance__family__project__in=projects_for_user(user))


def review_sets_for_user(user):
    return ReviewSet.objects.filter(project__in=projects_for_user(user))


def rounds_for_user(user):
    return CollectionRound.objects.filter(project__in=projects_for_user(user))


def images_of_projects(projects) -> QuerySet[Image]:
    """Images of ``projects`` (each image belongs to one project, like the instances, seed examples
    and review sets that show it)."""
    return Image.objects.filter(project__in=projects)


def images_for_user(user) -> QuerySet[Image]:
    return images_of_projects(projects_for_user(user))


def work_items_for_user(user) -> QuerySet[WorkItem]:
    return WorkItem.objects.filter(round__project__in=projects_for_user(user))


def assignments_for_user(user) -> QuerySet[Assignment]:
    return Assignment.objects.filter(round__project__in=projects_for_user(user))


def releases_for_user(user) -> QuerySet[Release]:
    return Release.objects.filter(project__in=projects_for_user(user))


def project_of(obj) -> Project | None:
    """The project that owns a family, image, instance, model output, review set, round, work item,
    assignment or release."""
    if isinstance(obj, Project):
        return obj
    if isinstance(obj, (InstructionFamily, ReviewSet, Image, CollectionRound, Release)):
        return obj.project
    if isinstance(obj, Instance):
        return obj.family.project
    if isinstance(obj, ModelOutput):
        return obj.instance.family.project
    if isinstance(obj, (WorkItem, Assignment)):
        return obj.round.project
    raise TypeError(f"{type(obj).__name__} has no project")
