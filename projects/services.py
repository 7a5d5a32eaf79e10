"""Writes for projects: creating them and managing their members."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from .errors import ProjectConflict, ProjectError
from .models import Membership, Project


# Slugs that name fixed pages beside the projects' own under /projects/ (the cockpit's list, new
# project, API tokens, ...): a project with one of these slugs could not be reached.
RESERVED_SLUGS = frozenset({"new", "api-tokens", "tokens", "api", "settings", "admin", "static", "media"})


def check_slug_free_of_pages(slug: str) -> None:
    if slug in RESERVED_SLUGS:
        raise ProjectError(f"slug: '{slug}' is reserved for a page of the cockpit; choose another.")


def _validation_message(error: ValidationError) -> str:
    if hasattr(error, "message_dict"):
        return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())
    return " ".join(error.messages)


@transaction.atomic
def create_project(*, name: str, slug: str, owner, description: str = "") -> Project:
    """A new project with ``owner`` as its first owner; its pseudonym secret is generated here."""
    project = Project(name=name, slug=slug, description=description, created_by=owner)
    try:
        # Fields first: a slug that is not one (control characters included) never reaches a query.
        project.full_clean(validate_unique=False)
    except ValidationError as error:
        raise ProjectError(_validation_message(error)) from None
    check_slug_free_of_pages(slug)
    if Project.objects.filter(slug=slug).exists():
        raise ProjectConflict(f"A project with slug '{slug}' exists.")
    try:
        with transaction.atomic():
            project.save()
    except IntegrityError:
        raise ProjectConflict(f"A project with slug '{slug}' exists.") from None
    Membership.objects.create(project=project, user=owner, role=Membership.Role.OWNER)
    return project


@transaction.atomic
def set_member(*, project: Project, user, role: str = Membership.Role.COLLABORATOR) -> Membership:
    """Add a member or change their role; the last owner cannot be demoted."""
    if role not in Membership.Role.values:
        raise ProjectError(f"Unknown role '{role}'; known: {', '.join(Membership.Role.values)}.")
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if membership is None:
        return Membership.objects.create(project=project, user=user, role=role)
    if membership.role == Membership.Role.OWNER and role != Membership.Role.OWNER:
        _refuse_losing_last_owner(project=project, user=user)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(*, project: Project, user) -> None:
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if membership is None:
        raise ProjectError(f"{user} is not a member of '{project.slug}'.")
    if membership.role == Membership.Role.OWNER:
        _refuse_losing_last_owner(project=project, user=user)
    membership.delete()


def _refuse_losing_last_owner(*, project: Project, user) -> None:
    owners = Membership.objects.select_for_update().filter(project=project, role=Membership.Role.OWNER)
    if not owners.exclude(user=user).exists():
        raise ProjectConflict(f"'{project.slug}' needs at least one owner.")


# Data loaded without naming a project (a command run without --project, rows from before every
# row had a project) goes here: a project like any other, with no members until a superuser adds some.
UNASSIGNED_SLUG = "unassigned"
UNASSIGNED_NAME = "Unassigned data"
UNASSIGNED_DESCRIPTION = "Data loaded without naming a project."


def unassigned_project() -> Project:
    """The project of data loaded without a project, created on first use."""
    project, _created = Project.objects.get_or_create(
        slug=UNASSIGNED_SLUG, defaults={"name": UNASSIGNED_NAME, "description": UNASSIGNED_DESCRIPTION}
    )
    return project
