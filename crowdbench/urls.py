from django.conf import settings
from django.conf.urls.static import static
from django.contrib import admin
from django.urls import include, path

from annotation.urls import api_patterns as annotation_api_patterns
from providers.urls import api_patterns as provider_api_patterns

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("health/", views.health, name="health"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on pages that link no icon (JSON, files): the same SVG.
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("projects/", include("cockpit.urls")),
    path("work/", include("annotation.urls")),
    path("work/", include("providers.urls")),  # pages for workers sent by MTurk and Prolific
    path("api/work/", include(annotation_api_patterns)),
    path("api/providers/", include(provider_api_patterns)),
    path("api/", include("api.urls")),  # the researcher API (docs/api.md)
]

# Unknown addresses under /api/ answer JSON, like every other API error.
handler404 = "crowdbench.views.not_found"
# An unreachable database (restarting, failing over) answers 503 with Retry-After, never a 500.
handler500 = "crowdbench.views.server_error"

if settings.DEBUG:
    urlpatterns += static(settings.MEDIA_URL, document_root=settings.MEDIA_ROOT)
