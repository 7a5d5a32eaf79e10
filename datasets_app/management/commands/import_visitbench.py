from django.core.management.base import BaseCommand, CommandError

from datasets_app.services import import_visitbench_file
from datasets_app.visitbench_csv import VisitBenchFormatError


class Command(BaseCommand):
    help = (
        "Import a published VisIT-Bench CSV (single-image or multi-image schema, detected from "
        "the header). Atomic: a malformed file changes nothing. Idempotent: rows already "
        "imported are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")

    def handle(self, *args, files, **options):
        for path in files:
            try:
                report = import_visitbench_file(path=path)
            except VisitBenchFormatError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(report.summary()))
