from django.core.management.base import BaseCommand, CommandError

from annotation.models import CollectionRound
from annotation.pipeline import generate_and_route_references, verifying_type
from datasets_app.reference_generation import instances_awaiting_reference
from llm.cli import parse_budget, run_step, write_step_report
from llm.params import LLMRunParams


def verification_round_option(round_id: int | None) -> CollectionRound | None:
    if round_id is None:
        return None
    round = CollectionRound.objects.filter(pk=round_id).first()
    if round is None:
        raise CommandError(f"--verification-round: no round with id {round_id}")
    if round.task_type != verifying_type():
        raise CommandError(f"--verification-round: round {round_id} is a {round.task_type} round")
    return round


class Command(BaseCommand):
    help = (
        "VisIT-Bench step 4: ask the LLM for a reference candidate for each instance awaiting one (from its "
        "instruction-conditioned captions and instruction), then open a verification item per candidate. "
        "Re-running sends nothing already answered."
    )

    def add_arguments(self, parser):
        parser.add_argument("--instances", nargs="+", type=int, metavar="ID",
                            help="only these instances (default: every instance awaiting a reference)")
        parser.add_argument("--model", help="model name (default: LLM_MODEL)")
        parser.add_argument("--budget", metavar="USD", help="stop before spending more than this many USD")
        parser.add_argument("--verification-round", type=int, metavar="ID",
                            help="add the verification items to this round (default: the caption round's "
                                 "follow-up round, or a new one with 3 workers per item)")

    def handle(self, *args, instances, model, budget, verification_round, verbosity, **options):
        cap = parse_budget(budget)
        round = verification_round_option(verification_round)
        try:
            chosen = instances_awaiting_reference(instance_ids=instances) if instances else None
        except LookupError as error:
            raise CommandError(f"--instances: {error}") from None
        report = run_step(generate_and_route_references, verbosity=verbosity, instances=chosen,
                          llm=LLMRunParams(model=model, budget_usd=cap), verification_round=round)
        write_pipeline_report(self, report)


def write_pipeline_report(command: BaseCommand, report) -> None:
    write_step_report(command, report.references, subject=lambda failure: f"instance {failure.instance_id}",
                      failed="no candidate, still awaiting a reference")
    command.stdout.write(report.routing.summary())
