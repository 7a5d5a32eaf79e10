"""Approve a round's submitted work and send its bonuses; --top-up brings pay to the target wage once."""
from django.core.management.base import BaseCommand

from providers import selectors, services

from ._common import round_from


class Command(BaseCommand):
    help = "Approve ROUND's submitted, unreviewed assignments and pay pending bonuses (safe to rerun)."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--top-up", action="store_true",
                            help="bonus each approved task up to the target hourly wage at the median time (once)")
        parser.add_argument("--feedback", default="")

    def handle(self, *args, **options):
        round = round_from(options["round"])
        report = services.pay_round(round=round, top_up=options["top_up"], feedback=options["feedback"])
        self.stdout.write(
            f"{report.approved} approved; top-up per task {report.top_up_per_task} {round.currency}; "
            f"{report.bonuses_granted} bonus(es) granted, {report.bonuses_paid} paid, "
            f"{report.bonuses_unsettled} awaiting a rerun, {report.bonuses_failed} refused, "
            f"{report.skipped_for_budget} skipped to stay within the budget cap"
        )
        for error in report.errors:
            self.stderr.write(f"  {error}")
        summary = selectors.pay_summary(round=round)
        self.stdout.write(
            f"median {summary['median_seconds']} s per task: {summary['effective_hourly_wage']}/h from the reward, "
            f"{summary['effective_hourly_wage_with_bonuses']}/h with bonuses (target {summary['target_hourly_wage']}); "
            f"committed {summary['committed_spend']} of budget cap {summary['budget_cap'] or 'none'}"
        )
