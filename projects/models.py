"""Projects: one benchmark-building study each, its members and its immutable releases.

A project owns its instruction families (and through them instances, captions, references and
model outputs), its IRR review sets and its collection rounds. Its ``pseudonym_secret`` keys the
pseudonymous worker ids of its releases; it is generated at creation and never shown or logged.
"""
from __future__ import annotations

import secrets

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models


def new_pseudonym_secret() -> str:
    return secrets.token_hex(32)


VERSION_VALIDATOR = RegexValidator(
    r"^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$",
    "A version is up to 64 letters, digits, dots, dashes, pluses or underscores, e.g. 1.0.0.",
)
RELEASE_NAME_VALIDATOR = RegexValidator(
    r"^[0-9A-Za-z][0-9A-Za-z._-]{0,99}$",
    "A release name is up to 100 letters, digits, dots, dashes or underscores.",
)


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # Keys HMAC-SHA256 worker pseudonyms; not editable, not shown (admin excludes it), not in __repr__.
    pseudonym_secret = models.CharField(max_length=64, default=new_pseudonym_secret, editable=False)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="crowdbench_projects"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Project {self.slug}>"


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        COLLABORATOR = "collaborator", "Collaborator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.COLLABORATOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "role", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user_and_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Release(models.Model):
    """A versioned snapshot of a project's releasable data; its files never change once written."""

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="releases")
    name = models.CharField(max_length=100, validators=[RELEASE_NAME_VALIDATOR])
    version = models.CharField(max_length=64, validators=[VERSION_VALIDATOR])
    directory = models.CharField(max_length=1000, help_text="Where the release's files were written.")
    # {"relative/path": {"sha256": "...", "bytes": n}} for every file, SHA256SUMS aside.
    files = models.JSONField(default=dict)
    counts = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "version"], name="one_release_per_name_and_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.project.slug})"


class ApiTokenName(models.Model):
    """The name a researcher gives one of their API tokens (knox's ``AuthToken`` has none): shown on
    the tokens page and used to revoke it. Goes with its token."""

    token = models.OneToOneField("knox.AuthToken", on_delete=models.CASCADE, primary_key=True,
                                 related_name="crowdbench_name")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="one_api_token_name_per_user")]
        verbose_name = "API token name"

    def __str__(self) -> str:
        return self.name
