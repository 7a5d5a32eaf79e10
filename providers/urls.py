"""Worker pages of every provider that has them, each under ``/work/<provider name>/``."""
from django.urls import include, path

from . import views
from .registry import PROVIDERS

app_name = "providers"

# Each under its provider's name as namespace ("providers:<name>:…", ``registry.worker_url_namespace``),
# which the rate limits the providers declare are keyed on.
urlpatterns = [
    path(f"{name}/", include((provider.worker_urls, name), namespace=name))
    for name, provider in PROVIDERS.items()
    if provider.worker_urls
]

api_patterns = (
    [
        path("assignments/<int:assignment_id>/submit/", views.ProviderSubmitView.as_view(), name="submit"),
        path("assignments/<int:assignment_id>/report-image/", views.ProviderReportImageView.as_view(),
             name="report-image"),
    ],
    "providers-api",
)
