import sys

from django.core.management.base import BaseCommand, CommandError

from datasets_app.services import export_visitbench
from datasets_app.visitbench_csv import MULTI_IMAGE, SINGLE_IMAGE
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = "Write the instances of one split back in the published VisIT-Bench CSV schema."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="Output CSV path, or - for stdout.")
        split = parser.add_mutually_exclusive_group()
        split.add_argument("--multi-image", dest="schema", action="store_const", const=MULTI_IMAGE)
        split.add_argument("--single-image", dest="schema", action="store_const", const=SINGLE_IMAGE)
        parser.set_defaults(schema=MULTI_IMAGE)
        parser.add_argument("--project", metavar="SLUG", help="only this project's instances (without it: every project's)")

    def handle(self, *args, out, schema, project, **options):
        try:
            project = get_project(slug=project) if project else None
        except ServiceError as exc:
            raise CommandError(f"--project: {exc.message}") from exc
        if out == "-":
            count = export_visitbench(handle=sys.stdout, schema=schema, project=project)
        else:
            try:
                with open(out, "w", newline="", encoding="utf-8") as handle:
                    count = export_visitbench(handle=handle, schema=schema, project=project)
            except OSError as exc:
                raise CommandError(f"{out}: cannot write ({exc.strerror})") from exc
            self.stdout.write(self.style.SUCCESS(f"{out}: {count} {schema.replace('_', '-')} rows"))
