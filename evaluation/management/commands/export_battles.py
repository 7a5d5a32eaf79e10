from django.core.management.base import BaseCommand, CommandError

from evaluation.battle_export import EXPORT_SOURCES, export_battles
from kernel.errors import ServiceError
from projects.selectors import get_project


class Command(BaseCommand):
    help = (
        "Write battles as JSON lines in the VisIT-Bench leaderboard's fields (A_model, B_model, A, B, image_url, "
        "instruction, instruction_category, engine, evaluated_with_reference, auto_evaluation_result, "
        "auto_evaluation_cot): the LLM judge's battles or the human judgments."
    )

    def add_arguments(self, parser):
        parser.add_argument("--source", choices=EXPORT_SOURCES, required=True,
                            help="judge: the LLM judge's battles; human: the crowd's judgments (collected and imported)")
        parser.add_argument("--out", required=True, metavar="FILE.jsonl", help="the file to write")
        parser.add_argument("--project", metavar="SLUG", help="only battles on this project's instances")
        parser.add_argument("--exclude-reference", action="store_true",
                            help="leave out battles against the reference (the published leaderboard files do)")

    def handle(self, *args, source, out, project, exclude_reference, **options):
        try:
            project = get_project(slug=project) if project else None
            report = export_battles(source=source, out=out, project=project,
                                    include_reference=not exclude_reference)
        except ServiceError as error:
            raise CommandError(f"{error.message} (nothing written)") from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
