"""Provider name → implementation: the one place to add a crowd provider.

Everything a provider knows (client, worker pages, script, fake, dry-run workers) lives in its
package; nothing outside it switches on its name. Adding one is a package plus one line here.
"""
from __future__ import annotations

from crowdbench.errors import ServiceError
from mturk.provider import MTurkProvider

from .base import CrowdProvider
from .local import LocalProvider
from .prolific.provider import ProlificProvider

PROVIDERS: dict[str, type[CrowdProvider]] = {
    "local": LocalProvider,
    "mturk": MTurkProvider,
    "prolific": ProlificProvider,
}


class UnknownProvider(ServiceError, ValueError):
    status_code = 400


def provider_class(name: str) -> type[CrowdProvider]:
    try:
        return PROVIDERS[name]
    except (KeyError, TypeError):
        raise UnknownProvider(f"unknown crowd provider {name!r}; known: {', '.join(sorted(PROVIDERS))}") from None


def get_provider(name: str, **options) -> CrowdProvider:
    return provider_class(name)(**options)
