"""``manage.py worker_quality (--round R | --project SLUG)``: recompute and show worker quality
(gold accuracy, leave-one-out agreement, median time, Dawid–Skene reliability)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import CollectionRound
from projects.errors import ProjectNotFound
from projects.selectors import get_project
from quality.selectors import worker_label
from quality.services import recompute_round_quality


class Command(BaseCommand):
    help = "Recompute the stored worker quality of a round (or of every round of a project) and print it."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--round", type=int)
        group.add_argument("--project", help="project slug: every round of the project")

    def handle(self, *args, **options):
        if options["round"] is not None:
            rounds = list(CollectionRound.objects.filter(pk=options["round"]))
            if not rounds:
                raise CommandError(f"--round: no collection round with id {options['round']}")
        else:
            try:
                project = get_project(slug=options["project"])
            except ProjectNotFound as error:
                raise CommandError(str(error)) from None
            rounds = list(project.rounds.order_by("pk"))
        for round in rounds:
            quality = recompute_round_quality(round=round)
            levels = ", ".join(f"{level}: {n}" for level, n in quality.levels.items()) or "no labelled items"
            self.stdout.write(f"round {round.pk} ({round.name}): {quality.items} items; {levels}; "
                              f"{quality.ties} tied; weighted label differs on {quality.weighted_differs}")
            for row in round.worker_quality.select_related("worker__user").order_by("worker_id"):
                self.stdout.write(
                    f"  {worker_label(row.worker)[:30]:<30} judgments {row.judgments:>4}  "
                    f"gold {row.gold_passed}/{row.gold_answers}  agreement {_share(row.agreement)}  "
                    f"median {_seconds(row.median_seconds)}  reliability {_share(row.reliability)}")


def _share(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.0f} s"
