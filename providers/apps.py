from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "Crowd providers"

    def ready(self):
        # The work layer below asks this one for the provider names and the paid bonuses.
        from annotation import hooks

        from .registry import PROVIDERS
        from .selectors import paid_bonuses

        hooks.connect(names=lambda: PROVIDERS, bonuses=paid_bonuses)
