"""Block a worker here and at their provider."""
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Worker
from providers import services


class Command(BaseCommand):
    help = "Block PROVIDER's worker EXTERNAL_ID (e.g. mturk A1B2C3) with a reason."

    def add_arguments(self, parser):
        parser.add_argument("provider")
        parser.add_argument("external_id")
        parser.add_argument("--reason", required=True)

    def handle(self, *args, **options):
        try:
            worker = Worker.objects.get(provider=options["provider"], external_id=options["external_id"])
        except Worker.DoesNotExist:
            raise CommandError("no such worker") from None
        services.block_worker(worker=worker, reason=options["reason"])
        self.stdout.write(f"{worker} blocked")
