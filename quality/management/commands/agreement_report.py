"""``manage.py agreement_report [--round R] [--json OUT]``: majority levels of the human pairwise
judgments (5/5, 4/5, 3/5 …; gold items left out) and each worker's agreement with the majority,
from the database. Thin: ``quality.selectors.agreement_report`` does the work."""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import CollectionRound
from quality.selectors import agreement_report


class Command(BaseCommand):
    help = ("Majority levels of the pairwise judgments (paper: of 690 pairs, 336 are 5/5, 200 are 4/5, "
            "154 are 3/5) and per-worker agreement with the majority, from the database.")

    def add_arguments(self, parser):
        parser.add_argument("--round", type=int, help="only this pairwise round's judgments")
        parser.add_argument("--json", type=Path, dest="json_out", help="also write the report as JSON here")

    def handle(self, *args, **options):
        round = None
        if options["round"] is not None:
            round = CollectionRound.objects.filter(pk=options["round"]).first()
            if round is None:
                raise CommandError(f"--round: no collection round with id {options['round']}")
            if round.task_type_handler.yields != "battles":
                raise CommandError(f"--round: round {round.pk} is a {round.task_type} round, not a pairwise round")
        report = agreement_report(round=round)
        if not report["pairs"]:
            where = f"round {round.pk}" if round is not None else "the database"
            raise CommandError(f"{where} has no counted pairwise judgments")
        write = self.stdout.write
        write(f"{report['pairs']} pairs, {report['judgments']} judgments, {report['ties']} tied")
        write("majority level  pairs  share")
        for level, count in report["levels"].items():
            write(f"{level:>14}  {count:>5}  {count / report['pairs']:6.1%}")
        write("\nworker                          votes  agreement  leave-one-out (scored)")
        for entry in report["workers"]:
            write(f"{entry['worker'][:30]:<30}  {entry['votes']:>5}  {_share(entry['agreement']):>9}  "
                  f"{_share(entry['loo_agreement']):>13} ({entry['loo_scored']})")
        if options["json_out"] is not None:
            try:
                options["json_out"].write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            except OSError as error:
                raise CommandError(f"--json: cannot write {options['json_out']}: {error.strerror}") from None
            write(f"wrote {options['json_out']}")


def _share(value) -> str:
    return "-" if value is None else f"{value:.1%}"
