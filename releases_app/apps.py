from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "releases_app"
    verbose_name = "Releases"
