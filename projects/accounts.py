"""Accounts made by researchers for other people: a researcher invited to a project, a local crowd
worker. Nobody types a password for someone else: the account is made without one, and its owner
sets it through a one-time link (Django's password-reset token, void once the password is set or
after ``PASSWORD_RESET_TIMEOUT``)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from .errors import ProjectConflict, ProjectError
from .models import Membership, Project
from .permissions import require_owner
from .services import set_member


def one_time_link(user) -> str:
    """The path of the page where ``user`` sets their password, valid until it is used."""
    return reverse("password_reset_confirm", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": default_token_generator.make_token(user)})


def create_account(*, username: str, email: str = "", groups: tuple[str, ...] = ()):
    """A new active user without a usable password, in ``groups``. Refuses a name that is taken or
    that the user model does not accept (``ProjectError``, nothing written)."""
    User = get_user_model()
    user = User(username=username, email=email)
    user.set_unusable_password()
    try:
        user.full_clean(exclude=["password"], validate_unique=False)
    except ValidationError as error:
        raise ProjectError("; ".join(f"{field}: {' '.join(messages)}"
                                     for field, messages in error.message_dict.items())) from None
    if User.objects.filter(username__iexact=username).exists():
        raise ProjectConflict(f"The user name '{username}' is taken; choose another.")
    with transaction.atomic():
        user.save()
        for name in groups:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@transaction.atomic
def invite_researcher(*, project: Project, by, username: str, email: str = "",
                      role: str = Membership.Role.COLLABORATOR):
    """A new researcher account, a member of ``project`` with ``role``: (the user, their one-time
    link). Only an owner of the project invites."""
    require_owner(user=by, project=project)
    if role not in Membership.Role.values:
        raise ProjectError(f"Unknown role '{role}'; known: {', '.join(Membership.Role.values)}.")
    user = create_account(username=username, email=email, groups=(settings.RESEARCHER_GROUP,))
    set_member(project=project, user=user, role=role)
    return user, one_time_link(user)


def new_link_for(*, user):
    """A fresh one-time link for an account that has not set its password yet (a lost link)."""
    if user.has_usable_password():
        raise ProjectConflict(f"{user.get_username()} has set a password already; they log in with it.")
    return one_time_link(user)
