"""What a round would cost on a provider, against its budget cap."""
from django.conf import settings
from django.core.management.base import BaseCommand

from kernel.money import format_money
from providers import services
from providers.registry import PROVIDERS, get_provider

from ._common import round_from


class Command(BaseCommand):
    help = "Estimate ROUND's cost on --provider: rewards, fees, expected top-up bonuses, against the budget cap."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--provider", choices=sorted(PROVIDERS), default=None)
        parser.add_argument("--expected-seconds", type=float, default=None)

    def handle(self, *args, **options):
        round = round_from(options["round"])
        provider = get_provider(options["provider"] or settings.PROVIDERS_DEFAULT)
        estimate = services.estimate_cost(round=round, provider=provider, expected_seconds=options["expected_seconds"])

        def shown(amount):
            return f"{format_money(amount, estimate.currency)} {estimate.currency}"

        cap = "none" if estimate.budget_cap is None else shown(estimate.budget_cap)
        self.stdout.write(
            f"{estimate.provider}: {estimate.tasks} tasks; rewards {shown(estimate.rewards)}, "
            f"fees {shown(estimate.fees)}, expected bonuses {shown(estimate.expected_bonuses)} "
            f"(+{shown(estimate.bonus_fees)} fees); total {shown(estimate.total)}; budget cap {cap}: "
            f"{'within budget' if estimate.within_budget else 'OVER BUDGET'}"
        )
