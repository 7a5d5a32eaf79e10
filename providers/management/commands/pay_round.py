"""Approve a round's submitted work and send its bonuses; --top-up brings pay to the target wage once."""
from django.core.management.base import BaseCommand, CommandError

from kernel.money import format_money
from providers import selectors, services
from providers.base import ProviderError

from ._common import round_from


class Command(BaseCommand):
    help = "Approve ROUND's submitted, unreviewed assignments and pay pending bonuses (safe to rerun)."

    def add_arguments(self, parser):
        parser.add_argument("round")
        parser.add_argument("--top-up", action="store_true",
                            help="bonus each approved task up to the target hourly wage at the median time (once)")
        parser.add_argument("--feedback", default="")
        parser.add_argument("--resend-unsettled", type=int, metavar="PAYMENT_ID",
                            help="send again one bonus the provider still does not show after its settle window "
                                 "(it may pay twice if the first call went through); nothing else is done")

    def handle(self, *args, **options):
        round = round_from(options["round"])
        if options["resend_unsettled"] is not None:
            try:
                payment = services.resend_unsettled_bonus(payment_id=options["resend_unsettled"], round=round)
            except ProviderError as error:
                raise CommandError(error.message) from None
            self.stderr.write(f"warning: bonus {payment.pk} was sent again; if the first pay call went through, "
                              "the worker is paid twice")
            self.stdout.write(f"bonus {payment.pk}: {payment.status}")
            return
        report = services.pay_round(round=round, top_up=options["top_up"], feedback=options["feedback"])
        if report.sync is not None:
            for row in report.sync.forged:
                self.stdout.write(f"  not paid, unknown to the provider (forged): {row}")
            if report.sync.awaiting_confirmation:
                self.stdout.write(f"  {report.sync.awaiting_confirmation} submission(s) not yet confirmed by the "
                                  "provider: not paid yet")
        self.stdout.write(
            f"{report.approved} approved; top-up per task {format_money(report.top_up_per_task, round.currency)} "
            f"{round.currency}; "
            f"{report.bonuses_granted} bonus(es) granted, {report.bonuses_paid} paid, "
            f"{report.bonuses_unsettled} awaiting a rerun, {report.bonuses_failed} refused, "
            f"{report.skipped_for_budget} skipped to stay within the budget cap"
        )
        if report.held_for_review:
            self.stdout.write(f"  {report.held_for_review} submission(s) held for review: their workers are below the "
                              "round's minimum gold accuracy for automatic approval")
        for error in report.errors:
            self.stderr.write(f"  {error}")
        for payment_id, worker, amount, age in report.awaiting_settlement:
            self.stdout.write(f"  bonus {payment_id} ({format_money(amount, round.currency)} {round.currency} to "
                              f"{worker}) possibly paid, awaiting "
                              f"settlement for {age if age is not None else '?'} s; rerun later, or resolve it with "
                              f"--resend-unsettled {payment_id}")
        summary = selectors.pay_summary(round=round)

        def shown(key):
            return format_money(summary[key], round.currency) or "none"

        cap = "none" if summary["budget_cap"] is None else f"{shown('budget_cap')} {round.currency}"

        self.stdout.write(
            f"median {summary['median_seconds']} s per task: {shown('effective_hourly_wage')}/h from the reward, "
            f"{shown('effective_hourly_wage_with_bonuses')}/h with bonuses (target {shown('target_hourly_wage')}); "
            f"committed {shown('committed_spend')} {round.currency} of budget cap {cap}"
        )
