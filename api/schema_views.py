"""The OpenAPI schemas at /api/schema/ (researcher API) and /api/work/schema/ (worker and provider
endpoints).

drf-spectacular makes the worker schema by patching its global settings for the length of the request
(``custom_settings``), which is not safe with threads: two requests at once mixed their settings,
answered 500, and could leave the worker settings in place for every later request of the process.
Here a schema is made by one request at a time (a lock around the patched settings and the
generation), and kept for the life of the process: it changes only with the code.
"""
from __future__ import annotations

import threading

from django.conf import settings
from django.utils import translation
from drf_spectacular.settings import patched_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.response import Response

_LOCK = threading.Lock()
# (schema name, language or None) -> the schema
_SCHEMAS: dict[tuple[str, str | None], dict] = {}


def forget_schemas() -> None:
    """Drop the schemas made so far (tests that change what a schema contains)."""
    with _LOCK:
        _SCHEMAS.clear()


class SchemaView(SpectacularAPIView):
    """drf-spectacular's schema view, with each schema made under one lock and kept per process."""

    schema_name = "researcher"

    @extend_schema(**SCHEMA_KWARGS)
    def get(self, request, *args, **kwargs):
        lang = request.GET.get("lang") if settings.USE_I18N else None
        if lang not in dict(settings.LANGUAGES):
            lang = None  # an unknown language is the default one; it is not a key of its own
        key = (self.schema_name, lang)
        with _LOCK:
            if key not in _SCHEMAS:
                with patched_settings(self.custom_settings):
                    if lang:
                        with translation.override(lang):
                            response = self._get_schema_response(request)
                    else:
                        response = self._get_schema_response(request)
                _SCHEMAS[key] = response.data
            schema = _SCHEMAS[key]
        suffix = self.perform_content_negotiation(request, force=True)[0].format
        return Response(data=schema,
                        headers={"Content-Disposition": f'inline; filename="{schema["info"]["title"]}.{suffix}"'})

    def _get_version_parameter(self, request):
        # No API versions: a ``?version=`` of the caller's choosing does not name a schema.
        return None
