"""Content-Security-Policy: the header of every response (docs/security.md).

The policy is ``settings.CONTENT_SECURITY_POLICY``, one place: a directive name and its sources.
Two placeholders stand for what is only known per request or per deployment: ``NONCE`` becomes
``'nonce-…'``, a fresh secret of each response (templates read it as ``{{ csp_nonce }}``), and
``MEDIA`` the origin the media storage serves images from, where that is not this site.

A view that needs other sources for a directive says so with ``@csp_replace``, as the MTurk
page does for ``frame-ancestors``; ``ContentSecurityPolicyMiddleware`` (crowdbench/middleware.py)
sets the header.
"""
from __future__ import annotations

import secrets
from functools import wraps
from urllib.parse import urlsplit

from django.conf import settings

NONCE = "<nonce>"
MEDIA = "<media>"


def new_nonce() -> str:
    return secrets.token_urlsafe(18)


def csp_replace(**directives):
    """Decorate a view: its responses use these sources for these directives (``form_action`` for
    ``form-action``). A value is a list of sources or a function of the request returning one
    (read per request, so it follows the settings)."""
    changes = {name.replace("_", "-"): sources for name, sources in directives.items()}

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            response.csp_replace = {
                name: list(sources(request) if callable(sources) else sources)
                for name, sources in changes.items()
            }
            return response

        return wrapped

    return decorate


def origin(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def media_origins() -> list[str]:
    """Where the page's stored images come from when not from this site: an absolute MEDIA_URL,
    the S3 storage's custom domain (served over https) or its endpoint."""
    found = []
    media_url = origin(settings.MEDIA_URL or "")
    if media_url:
        found.append(media_url)
    options = settings.STORAGES.get("default", {}).get("OPTIONS", {})
    if options.get("custom_domain"):
        found.append(f"https://{options['custom_domain']}")
    elif options.get("endpoint_url"):
        endpoint = origin(options["endpoint_url"])
        if endpoint:
            found.append(endpoint)
    return found


def header_value(*, nonce: str, replace: dict[str, list[str]] | None = None) -> str:
    directives = {**settings.CONTENT_SECURITY_POLICY, **(replace or {})}
    parts = []
    for name, sources in directives.items():
        values = []
        for source in sources:
            if source == NONCE:
                values.append(f"'nonce-{nonce}'")
            elif source == MEDIA:
                values.extend(media_origins())
            else:
                values.append(source)
        values = list(dict.fromkeys(values))  # the order kept, each source once
        parts.append(" ".join([name, *values]))
    return "; ".join(parts)


def nonce(request) -> dict:
    """Template context processor: ``csp_nonce``, for ``<script nonce="{{ csp_nonce }}">``."""
    return {"csp_nonce": getattr(request, "csp_nonce", "")}
