from django.apps import AppConfig


class ProlificConfig(AppConfig):
    name = "providers.prolific"
    label = "prolific"
    verbose_name = "Prolific"
