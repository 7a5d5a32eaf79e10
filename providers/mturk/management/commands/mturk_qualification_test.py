"""Create an MTurk qualification test from a round's gold items."""
from django.core.management.base import BaseCommand, CommandError

from providers.base import ProviderError
from providers.management.commands._common import round_from
from providers.mturk.provider import MTurkProvider
from providers.mturk.qualification import create_qualification_test


class Command(BaseCommand):
    help = "Create a qualification type whose test is ROUND's gold items; prints the id for --qualification-type."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--name", required=True)
        parser.add_argument("--description", required=True)
        parser.add_argument("--duration-seconds", type=int, default=1200)
        parser.add_argument("--retry-delay-seconds", type=int, default=None)

    def handle(self, *args, **options):
        round = round_from(options["round"])
        try:
            type_id = create_qualification_test(
                provider=MTurkProvider(), round=round, name=options["name"], description=options["description"],
                duration_seconds=options["duration_seconds"], retry_delay_seconds=options["retry_delay_seconds"],
            )
        except ProviderError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(type_id)
