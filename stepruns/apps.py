from django.apps import AppConfig


class StepRunsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "stepruns"
    verbose_name = "Background step runs"
