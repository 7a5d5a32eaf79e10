from django.core.management.base import BaseCommand, CommandError

from datasets_app.licenses import UnknownLicense, normalise_license
from datasets_app.services import import_visitbench_file
from datasets_app.visitbench_csv import VisitBenchFormatError
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = (
        "Import a published VisIT-Bench CSV (single-image or multi-image schema, detected from "
        "the header). Atomic: a malformed file changes nothing. Idempotent: rows already "
        "imported are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--project", metavar="SLUG", help="the project the new families belong to")
        parser.add_argument(
            "--image-license", default="", metavar="LICENSE",
            help="license recorded for the file's new images, e.g. CC-BY-4.0 for the published "
            "VisIT-Bench sheets (an SPDX identifier; usual spellings such as 'CC BY 4.0' are accepted, "
            "unknown ones refused); releases leave out images whose license does not allow publishing",
        )

    def handle(self, *args, files, project, image_license, **options):
        try:
            project = get_project(slug=project) if project else None
        except ServiceError as exc:
            raise CommandError(f"--project: {exc.message}") from exc
        try:
            image_license = normalise_license(image_license)
        except UnknownLicense as exc:
            raise CommandError(f"--image-license: {exc.message}") from exc
        for path in files:
            try:
                report = import_visitbench_file(path=path, project=project, image_license=image_license)
            except VisitBenchFormatError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(report.summary()))
