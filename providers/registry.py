"""Provider name → implementation: the one place to add a crowd provider.

Everything a provider knows (client, worker pages, script, dry-run workers) lives in its package;
nothing outside it switches on its name. Adding one is a package plus one line here: its name and
the dotted path of its class, imported on first use.
"""
from __future__ import annotations

from kernel.registry import Registry

from .base import CrowdProvider

PROVIDERS: Registry[type[CrowdProvider]] = Registry("crowd provider")
PROVIDERS.register("providers.local.LocalProvider", name="local")
PROVIDERS.register("providers.mturk.provider.MTurkProvider", name="mturk")
PROVIDERS.register("providers.prolific.provider.ProlificProvider", name="prolific")


def worker_url_namespace(name: str) -> str:
    """The URL namespace of provider ``name``'s worker pages (``providers.urls`` mounts them under it)."""
    return f"providers:{name}"


def rate_limited_views() -> list[tuple[str, str]]:
    """(rate-limit group, view name) of every registered provider's rate-limited worker pages, as the
    providers declare them (``CrowdProvider.rate_limited_views``)."""
    return [
        (group, f"{worker_url_namespace(name)}:{url_name}")
        for name, provider in PROVIDERS.items() if provider.worker_urls
        for group, url_names in provider.rate_limited_views.items()
        for url_name in url_names
    ]


def provider_class(name: str) -> type[CrowdProvider]:
    return PROVIDERS.get(name)


def get_provider(name: str, **options) -> CrowdProvider:
    return provider_class(name)(**options)
