from django.apps import AppConfig


class DatasetsAppConfig(AppConfig):
    name = "datasets_app"
    verbose_name = "Benchmark data"
