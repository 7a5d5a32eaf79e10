from django.core.management.base import BaseCommand, CommandError

from evaluation.preference_import import PreferenceFileError, import_pairwise_preferences
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = (
        "Import published human pairwise preferences (VisIT-Bench's CSV: image_url, instruction, A, B, A_model, "
        "B_model, model_selection.A, model_selection.B) into a project. Rows are matched to the project's "
        "instances and stored model outputs; atomic (a bad row imports nothing) and idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to the pairwise preference CSV")
        parser.add_argument("--project", metavar="SLUG", required=True, help="the project whose instances are judged")
        parser.add_argument("--reference-name", metavar="NAME",
                            help="the model name that stands for the accepted reference "
                                 "(default: the ANNOTATION_REFERENCE_SIDE_NAME setting)")

    def handle(self, *args, file, project, reference_name, **options):
        try:
            project = get_project(slug=project)
            report = import_pairwise_preferences(path=file, project=project, reference_name=reference_name)
        except PreferenceFileError as error:
            raise CommandError(f"{error} (nothing imported)") from None
        except ServiceError as error:
            raise CommandError(f"{error.message} (nothing imported)") from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
