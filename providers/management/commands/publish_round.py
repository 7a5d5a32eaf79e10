"""Publish a round on a crowd provider after checking its cost against the budget and balance."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.errors import CrowdWorkError
from kernel.money import format_money
from providers import services
from providers.base import ProviderError
from providers.registry import PROVIDERS

from ._common import round_from


class Command(BaseCommand):
    help = "Publish ROUND on --provider (mturk, prolific or local); --dry-run rehearses it with simulated workers."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--provider", choices=sorted(PROVIDERS), default=None)
        parser.add_argument("--dry-run", action="store_true",
                            help="publish on an in-process fake and let simulated workers do the round; "
                                 "nothing is kept and nobody is paid")
        parser.add_argument("--accuracy", type=float, default=0.9, help="dry run: chance a simulated answer is right")
        parser.add_argument("--median-seconds", type=float, default=60.0, help="dry run: simulated median task time")
        parser.add_argument("--seed", type=int, default=None, help="dry run: random seed")
        parser.add_argument("--expected-seconds", type=float, default=None,
                            help="expected seconds per task, for the top-up part of the cost estimate")
        # MTurk qualification requirements (kept with the publication, so a rerun asks for the same).
        parser.add_argument("--min-approval-rate", type=int, default=None)
        parser.add_argument("--min-approved-hits", type=int, default=None)
        parser.add_argument("--locale", action="append", dest="locales", default=None)
        parser.add_argument("--masters", action="store_true")
        parser.add_argument("--qualification-type", dest="qualification_type_id", default=None)
        parser.add_argument("--qualification-min-score", type=int, default=None,
                            help="lowest score on our qualification (a percentage for tests from gold items)")
        parser.add_argument("--estimated-minutes", type=int, default=None, help="Prolific: estimated completion time")
        parser.add_argument("--first-language-id", action="append", dest="first_language_ids", default=None,
                            help="Prolific: a choice id of the first-language filter (repeatable)")
        parser.add_argument("--fluent-language-id", action="append", dest="fluent_language_ids", default=None,
                            help="Prolific: a choice id of the fluent-languages filter (repeatable)")

    def handle(self, *args, **options):
        round = round_from(options["round"])
        provider = options["provider"] or settings.PROVIDERS_DEFAULT
        publish_options = {
            key: options[key]
            for key in ("min_approval_rate", "min_approved_hits", "locales", "masters", "qualification_type_id",
                        "qualification_min_score", "estimated_minutes", "first_language_ids",
                        "fluent_language_ids")
            if options[key]
        }
        if options["dry_run"]:
            from providers.dry_run import rehearse

            report = rehearse(round=round, provider_name=provider, options=publish_options,
                              accuracy=options["accuracy"], median_seconds=options["median_seconds"],
                              seed=options["seed"])
            for line in report.lines():
                self.stdout.write(line)
            return
        try:
            result = services.publish_round(round=round, provider_name=provider, options=publish_options,
                                            expected_seconds=options["expected_seconds"])
        except (ProviderError, CrowdWorkError) as error:
            raise CommandError(str(error)) from None
        publication = result.publication
        self.stdout.write(
            f"round {round.pk} published on {provider} ({publication.external_id or 'no external id'}): "
            f"{result.tasks_created} task(s) created, {result.tasks_existing} already there; "
            f"estimated cost {format_money(publication.details.get('estimate', {}).get('total'), round.currency)} "
            f"{round.currency}"
        )
