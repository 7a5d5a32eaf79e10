from django.core.management.base import BaseCommand, CommandError

from datasets_app.review_sets_io import ReviewSetFormatError
from datasets_app.services import import_review_sets_file


class Command(BaseCommand):
    help = (
        "Import IRR review sets from CSV or JSONL (an image, its category and language, and five "
        "reviews by prompt rank). Atomic; sets already present (same item_id and language) are "
        "skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")

    def handle(self, *args, files, **options):
        for path in files:
            try:
                report = import_review_sets_file(path=path)
            except ReviewSetFormatError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(report.summary()))
