import json

from django.core.management.base import BaseCommand, CommandError

from datasets_app.models import Source
from datasets_app.selectors import yield_report
from kernel.errors import ServiceError
from projects.selectors import get_project

SPLIT_LABELS = {"single_image": "single-image", "multi_image": "multi-image", "all": "all"}


class Command(BaseCommand):
    help = "Pipeline yield per split: % kept, % problem in caption, % problem in response."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")
        parser.add_argument(
            "--source", choices=Source.values,
            help="Only instances of this origin (e.g. imported, or crowd for data collected here).",
        )
        parser.add_argument("--project", metavar="SLUG", help="only this project's instances (without it: every project's)")

    def handle(self, *args, **options):
        try:
            project = get_project(slug=options["project"]) if options["project"] else None
        except ServiceError as exc:
            raise CommandError(f"--project: {exc.message}") from exc
        report = yield_report(source=options["source"], project=project)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        header = f"{'split':<14}{'candidates':>11}{'kept %':>9}{'caption %':>11}{'response %':>12}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for key, split in report["splits"].items():
            self.stdout.write(
                f"{SPLIT_LABELS[key]:<14}{split['candidates']:>11}{split['kept_pct']:>9.1f}"
                f"{split['caption_problem_pct']:>11.1f}{split['response_problem_pct']:>12.1f}"
            )
