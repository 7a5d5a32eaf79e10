from django.apps import AppConfig


class StepRunsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "stepruns"
    verbose_name = "Background step runs"

    def ready(self) -> None:
        from annotation.pipeline import reference_wanted

        from .services import generate_wanted_reference

        # The one background path for LLM work: the reference a caption leaves awaited is a step run.
        reference_wanted.connect(generate_wanted_reference, dispatch_uid="stepruns.generate_wanted_reference")
