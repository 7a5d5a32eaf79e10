"""Stop new work on a round at every provider it is published on."""
from django.core.management.base import BaseCommand

from providers import services

from ._common import round_from


class Command(BaseCommand):
    help = "Expire ROUND's HITs / stop its studies; submitted work can still be reviewed and paid."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--delete", action="store_true",
                            help="also delete tasks whose work is all reviewed (MTurk HITs)")

    def handle(self, *args, **options):
        round = round_from(options["round"])
        expired = services.expire_round(round=round)
        self.stdout.write(f"{len(expired)} publication(s) expired: {', '.join(p.provider for p in expired) or '-'}")
        if options["delete"]:
            kept = services.delete_round_tasks(round=round)
            self.stdout.write(f"not deleted yet (work awaiting review): {', '.join(kept) or 'none'}")
