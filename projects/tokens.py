"""API tokens of researchers: created, named and revoked on the cockpit's token page or through the
API, shown once.

knox stores only a SHA-512 digest of each token and its first characters (``token_key``); the token
itself is never stored or logged. Each token has a name (``ApiTokenName``), unique among its holder's
tokens, that lists and revokes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import knox_settings

from djangokit.text_input import clean_text
from kernel.errors import ServiceError
from projects.errors import ProjectPermissionDenied
from projects.models import ApiTokenName
from projects.permissions import is_researcher

MAX_TOKEN_NAME = ApiTokenName._meta.get_field("name").max_length


class TokenLimitReached(ServiceError):
    status_code = 400


class BadTokenName(ServiceError):
    status_code = 400


class TokenNotFound(ServiceError):
    status_code = 404


@dataclass(frozen=True)
class TokenRow:
    """What is shown of a token: never its secret."""

    name: str
    token_key: str
    created: datetime
    expiry: datetime | None


def tokens_for_user(user) -> QuerySet[AuthToken]:
    """The user's tokens that have not expired, newest first."""
    now = timezone.now()
    return AuthToken.objects.filter(user=user).exclude(expiry__lt=now).order_by("-created")


def token_rows(user) -> list[TokenRow]:
    """The user's live tokens by name (a token made before names were kept is named by its first
    characters)."""
    return [TokenRow(name=_name_of(token), token_key=token.token_key, created=token.created, expiry=token.expiry)
            for token in tokens_for_user(user).select_related("crowdbench_name")]


def _name_of(token: AuthToken) -> str:
    try:
        return token.crowdbench_name.name
    except ApiTokenName.DoesNotExist:
        return token.token_key


def clean_token_name(name) -> str:
    try:
        return clean_text(name, label="The token's name", max_length=MAX_TOKEN_NAME, multiline=False)
    except ValidationError as error:
        raise BadTokenName(" ".join(error.messages)) from None


def create_token(*, user, name: str | None = None) -> tuple[AuthToken, str]:
    """A new token for a researcher, named ``name`` (unique among their tokens; none given: named by
    its first characters): (its record, the token, to be shown once)."""
    if not is_researcher(user):
        raise ProjectPermissionDenied("Only researchers may have API tokens.")
    now = timezone.now()
    if name is not None:
        name = clean_token_name(name)
    limit = knox_settings.TOKEN_LIMIT_PER_USER
    live = AuthToken.objects.filter(user=user).exclude(expiry__lt=now)
    # Counted without the expired ones, which go only once the new token is made: a refusal changes nothing.
    if limit is not None and live.count() >= limit:
        raise TokenLimitReached(f"You have {limit} tokens, the most allowed; revoke one first.")
    if name is not None and ApiTokenName.objects.filter(user=user, name=name, token__in=live).exists():
        raise BadTokenName(f"You already have a token named '{name}'; choose another name or revoke that one.")
    with transaction.atomic():
        AuthToken.objects.filter(user=user, expiry__lt=now).delete()
        record, token = AuthToken.objects.create(user=user)
        ApiTokenName.objects.create(token=record, user=user, name=name or record.token_key)
    return record, token


def revoke_token(*, user, name: str | None = None, token_key: str | None = None) -> None:
    """Delete one of the user's tokens, named by its name (or, for a token without one, its first
    characters)."""
    tokens = AuthToken.objects.filter(user=user)
    if name is not None:
        named = tokens.filter(crowdbench_name__name=name)
        deleted, _ = (named if named.exists() else tokens.filter(crowdbench_name__isnull=True, token_key=name)).delete()
    elif token_key is not None:
        deleted, _ = tokens.filter(token_key=token_key).delete()
    else:
        deleted = 0
    if not deleted:
        raise TokenNotFound("No such token among yours.")
