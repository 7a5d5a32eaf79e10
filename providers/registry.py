"""Provider name → implementation: the one place to add a crowd provider.

Everything a provider knows (client, worker pages, script, fake, dry-run workers) lives in its
package; nothing outside it switches on its name. Adding one is a package plus one line here; each
class is registered under its ``name``.
"""
from __future__ import annotations

from crowdbench.registry import Registry
from mturk.provider import MTurkProvider

from .base import CrowdProvider
from .local import LocalProvider
from .prolific.provider import ProlificProvider

PROVIDERS: Registry[type[CrowdProvider]] = Registry("crowd provider")
PROVIDERS.register(LocalProvider)
PROVIDERS.register(MTurkProvider)
PROVIDERS.register(ProlificProvider)


def provider_class(name: str) -> type[CrowdProvider]:
    return PROVIDERS.get(name)


def get_provider(name: str, **options) -> CrowdProvider:
    return provider_class(name)(**options)
