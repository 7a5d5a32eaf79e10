from django.core.management.base import BaseCommand, CommandError

from annotation.pipeline import regenerate_discarded
from datasets_app.models import Instance
from llm.cli import parse_budget, run_step
from llm.params import LLMRunParams
from .generate_references import verification_round_option, write_pipeline_report

REASONS = [value for value in Instance.DiscardReason.values if value]


class Command(BaseCommand):
    help = (
        "Ask the LLM afresh for instances discarded for a problem in the response (or the given reasons): "
        "they go back to awaiting a reference, get a new candidate and a new verification item."
    )

    def add_arguments(self, parser):
        parser.add_argument("--discarded", nargs="+", choices=REASONS, default=["response"],
                            help="discard reasons to regenerate (default: response)")
        parser.add_argument("--instances", nargs="+", type=int, metavar="ID", help="only these instances")
        parser.add_argument("--model", help="model name (default: LLM_MODEL)")
        parser.add_argument("--budget", metavar="USD", help="stop before spending more than this many USD")
        parser.add_argument("--verification-round", type=int, metavar="ID",
                            help="add the verification items to this round")

    def handle(self, *args, discarded, instances, model, budget, verification_round, verbosity, **options):
        cap = parse_budget(budget)
        round = verification_round_option(verification_round)
        report = run_step(regenerate_discarded, verbosity=verbosity, reasons=discarded, instance_ids=instances,
                          llm=LLMRunParams(model=model, budget_usd=cap), verification_round=round)
        if not report.reset_instances:
            raise CommandError(f"no instances discarded for: {', '.join(discarded)}")
        self.stdout.write(f"{len(report.reset_instances)} discarded instances back to awaiting a reference")
        write_pipeline_report(self, report)
