"""Shared bits of the provider commands."""
from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import CollectionRound


def round_from(value) -> CollectionRound:
    try:
        return CollectionRound.objects.get(pk=int(value))
    except (CollectionRound.DoesNotExist, ValueError):
        raise CommandError(f"no collection round with id {value!r}") from None
