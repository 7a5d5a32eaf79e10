from django.core.management.base import BaseCommand, CommandError

from annotation.models import CollectionRound, round_default
from annotation.pipeline import recaption_discarded, verifying_type
from datasets_app.models import Instance

from llm.cli import parse_amount

REASONS = [value for value in Instance.DiscardReason.values if value]


class Command(BaseCommand):
    help = (
        "Start a new caption round over instances discarded for a problem in the caption (or the given "
        "reasons). They go back to awaiting a caption; the new captions replace the old ones once chosen."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from-discarded", nargs="+", choices=REASONS, default=[Instance.DiscardReason.CAPTION],
                            dest="reasons", help="discard reasons to re-caption (default: caption)")
        parser.add_argument("--instances", nargs="+", type=int, metavar="ID", help="only these instances")
        parser.add_argument("--name", help="round name")
        parser.add_argument("--workers-per-item", type=int, default=round_default("workers_per_item"))
        parser.add_argument("--reward", metavar="AMOUNT", help="reward per task (default: the last caption round's)")
        parser.add_argument("--follow-up-round", type=int, metavar="ID",
                            help="verification round that receives the regenerated candidates automatically")
        parser.add_argument("--draft", action="store_true", help="leave the round in draft instead of opening it")

    def handle(self, *args, reasons, instances, name, workers_per_item, reward, follow_up_round, draft, **options):
        if workers_per_item < 1:
            raise CommandError("--workers-per-item must be at least 1")
        amount = parse_amount(reward, option="--reward")
        follow_up = None
        if follow_up_round is not None:
            follow_up = CollectionRound.objects.filter(pk=follow_up_round, task_type=verifying_type()).first()
            if follow_up is None:
                raise CommandError(f"--follow-up-round: no verification round with id {follow_up_round}")
        try:
            report = recaption_discarded(
                reasons=reasons, instance_ids=instances, name=name, workers_per_item=workers_per_item,
                reward_per_task=amount, follow_up_round=follow_up, open=not draft,
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        if report.round is None:
            raise CommandError(f"no instances discarded for: {', '.join(reasons)}")
        self.stdout.write(self.style.SUCCESS(report.summary()))
