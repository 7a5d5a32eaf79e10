"""API tokens of researchers: created and revoked on the cockpit's token page, shown once.

knox stores only a SHA-512 digest of each token and its first characters (``token_key``, which
names it on the page); the token itself is never stored or logged.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import knox_settings

from kernel.errors import ServiceError
from projects.errors import ProjectPermissionDenied
from projects.permissions import is_researcher


class TokenLimitReached(ServiceError):
    status_code = 400


class TokenNotFound(ServiceError):
    status_code = 404


def tokens_for_user(user) -> QuerySet[AuthToken]:
    """The user's tokens that have not expired, newest first."""
    now = timezone.now()
    return AuthToken.objects.filter(user=user).exclude(expiry__lt=now).order_by("-created")


def create_token(*, user) -> tuple[AuthToken, str]:
    """A new token for a researcher: (its record, the token, to be shown once)."""
    if not is_researcher(user):
        raise ProjectPermissionDenied("Only researchers may have API tokens.")
    now = timezone.now()
    limit = knox_settings.TOKEN_LIMIT_PER_USER
    # Counted without the expired ones, which go only once the new token is made: a refusal changes nothing.
    if limit is not None and AuthToken.objects.filter(user=user).exclude(expiry__lt=now).count() >= limit:
        raise TokenLimitReached(f"You have {limit} tokens, the most allowed; revoke one first.")
    with transaction.atomic():
        AuthToken.objects.filter(user=user, expiry__lt=now).delete()
        return AuthToken.objects.create(user=user)


def revoke_token(*, user, token_key: str) -> None:
    """Delete one of the user's tokens, named by its first characters."""
    deleted, _ = AuthToken.objects.filter(user=user, token_key=token_key).delete()
    if not deleted:
        raise TokenNotFound("No such token among yours.")
