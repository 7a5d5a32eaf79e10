"""Expire assignments past their round's time limit (also done lazily when workers ask for work)."""
from django.core.management.base import BaseCommand

from annotation.services.engine import expire_stale_assignments


class Command(BaseCommand):
    help = "Mark assignments past their time limit as expired, freeing their slots for other workers."

    def handle(self, *args, **options):
        expired = expire_stale_assignments()
        self.stdout.write(f"{expired} assignment(s) expired")
