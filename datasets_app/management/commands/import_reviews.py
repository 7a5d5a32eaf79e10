from django.core.management.base import BaseCommand, CommandError

from datasets_app.review_sets_io import ReviewSetFormatError
from datasets_app.services import import_review_sets_file
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = (
        "Import IRR review sets from CSV or JSONL (an image, its category and language, and five "
        "reviews by prompt rank). Atomic; sets already present (same item_id and language) are "
        "skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--project", metavar="SLUG", help="the project the new review sets belong to")

    def handle(self, *args, files, project, **options):
        try:
            project = get_project(slug=project) if project else None
        except ServiceError as exc:
            raise CommandError(f"--project: {exc.message}") from exc
        for path in files:
            try:
                report = import_review_sets_file(path=path, project=project)
            except ReviewSetFormatError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(report.summary()))
