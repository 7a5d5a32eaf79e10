"""Read the providers' submissions for a round and match them to ours."""
from django.core.management.base import BaseCommand, CommandError

from providers import services
from providers.base import ProviderError

from ._common import round_from


class Command(BaseCommand):
    help = "Sync ROUND's submissions from every provider it is published on."

    def add_arguments(self, parser):
        parser.add_argument("round")

    def handle(self, *args, **options):
        round = round_from(options["round"])
        try:
            report = services.sync_round(round=round)
        except ProviderError as error:
            raise CommandError(f"{error}; nothing was lost, run the command again") from None
        self.stdout.write(
            f"{report.linked} linked, {report.recovered} recovered from the provider, "
            f"{report.mirrored} review states taken over, {len(report.unmatched)} unmatched; "
            f"{report.confirmed} newly confirmed, {report.awaiting_confirmation} awaiting confirmation, "
            f"{len(report.forged)} forged"
        )
        for row in report.unmatched:
            self.stdout.write(f"  unmatched: {row}")
        for row in report.forged:
            self.stdout.write(f"  forged (saved here, unknown to the provider; never counted or paid): {row}")
