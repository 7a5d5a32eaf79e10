from django.core.management.base import BaseCommand, CommandError

from datasets_app.model_outputs import import_predictions
from datasets_app.models import Instance
from datasets_app.visitbench_csv import VisitBenchFormatError
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = (
        "Import candidate-model outputs from a leaderboard predictions.csv (instruction, instruction_category, "
        "image or images, '<model> prediction' columns), matching rows to instances by instruction and images. "
        "Atomic; re-importing updates outputs in place."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to predictions.csv")
        parser.add_argument("--strict", action="store_true",
                            help="fail (importing nothing) when any row matches no instance")
        parser.add_argument("--project", metavar="SLUG",
                            help="match rows to this project's instances only (without it: every project's)")

    def handle(self, *args, file, strict, project, **options):
        try:
            instances = Instance.objects.filter(family__project=get_project(slug=project)) if project else None
        except ServiceError as exc:
            raise CommandError(f"--project: {exc.message}") from exc
        try:
            report = import_predictions(path=file, strict=strict, instances=instances)
        except VisitBenchFormatError as error:
            raise CommandError(f"{error} (nothing imported)") from None
        for row in report.unmatched:
            self.stderr.write(f"{file}, row {row.row_number}: not imported: {row.reason}")
        style = self.style.SUCCESS if not report.unmatched else self.style.WARNING
        self.stdout.write(style(report.summary()))
