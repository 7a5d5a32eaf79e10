from django.apps import AppConfig


class MturkConfig(AppConfig):
    name = "providers.mturk"
    label = "mturk"  # its migrations and tables keep the name
    verbose_name = "Amazon Mechanical Turk"
