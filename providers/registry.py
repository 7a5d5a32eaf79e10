"""Provider name → implementation: the one place to add a crowd provider."""
from __future__ import annotations

from django.utils.module_loading import import_string

from .base import CrowdProvider

PROVIDERS = {
    "local": "providers.local.LocalProvider",
    "mturk": "mturk.provider.MTurkProvider",
    "prolific": "providers.prolific.ProlificProvider",
}


def get_provider(name: str, **options) -> CrowdProvider:
    try:
        path = PROVIDERS[name]
    except KeyError:
        raise ValueError(f"unknown crowd provider {name!r}; known: {', '.join(sorted(PROVIDERS))}") from None
    return import_string(path)(**options)
