"""``manage.py metric_agreement``: how often each text metric (and an LLM judge) picks the human
majority of the stored pairwise judgments, per agreement level, and system-level Spearman ρ."""
from __future__ import annotations

import json
import math
import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.metrics.agreement import AgreementReport, metric_agreement
from evaluation.metrics.judge_file import InvalidJudgeFile, read_judge_file
from evaluation.metrics.registry import METRICS
from kernel.errors import ServiceError
from stats.metric_agreement import INTERVAL_METHODS, plot_metric_agreement


def format_table(report: AgreementReport) -> str:
    result = report.result
    levels = list(dict.fromkeys(result.accuracy["level"]))
    header = ["metric", *levels, "spearman rho (p)"]
    rows = []
    for name in result.metrics:
        table = result.accuracy[result.accuracy["metric"] == name].set_index("level")
        cells = [result.labels.get(name, name)]
        for level in levels:
            row = table.loc[level]
            cells.append("-" if row["pairs"] == 0 else
                         f"{row['accuracy']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}] n={int(row['pairs'])}")
        system = result.system[name]
        cells.append(f"{system.rho:+.2f} ({system.p_value:.3f})" if math.isfinite(system.rho) else system.note)
        rows.append(cells)
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def render(cells):
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    return "\n".join([render(header), render(["-" * w for w in widths]), *(render(r) for r in rows)])


class Command(BaseCommand):
    help = (
        "Accuracy of the text metrics (BLEU-4, ROUGE-L, METEOR, CIDEr, BERTScore, length, random) and "
        "optionally an LLM judge at picking the human majority of the stored pairwise judgments, per "
        "agreement level, with binomial intervals and system-level Spearman rho."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--round", type=int, metavar="ROUND_ID", help="one pairwise round only (default all)")
        parser.add_argument("--metrics", metavar="NAME,...",
                            help=f"metrics to compare (default all: {','.join(METRICS)})")
        parser.add_argument("--judge-json", metavar="FILE", help="battles of the LLM judge (manage.py judge --json)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random baseline and tie-breaks (default 0)")
        parser.add_argument("--confidence", type=float, default=0.95, help="interval confidence (default 0.95)")
        parser.add_argument("--interval", choices=INTERVAL_METHODS, default="wilson")
        parser.add_argument("--bertscore-model", metavar="DIR",
                            help="local BERTScore model folder (default $BERTSCORE_MODEL, else the packaged MiniLM)")
        parser.add_argument("--bertscore-layers", type=int, metavar="N", help="BERTScore layer (default the last)")
        parser.add_argument("--json", dest="json_path", metavar="OUT", help="write the report as JSON")
        parser.add_argument("--plot", dest="plot_path", metavar="PNG", help="write a bar plot (paper Figure 9)")

    def handle(self, *args, **options) -> None:
        from annotation.models import CollectionRound
        from annotation.task_types import task_type_keys_yielding

        if not 0 < options["confidence"] < 1:
            raise CommandError("--confidence must lie strictly between 0 and 1")
        names = None
        if options["metrics"]:
            names = [name.strip() for name in options["metrics"].split(",") if name.strip()]
            unknown = [name for name in names if name not in METRICS]
            if unknown or not names:
                raise CommandError(f"--metrics: unknown metric {', '.join(unknown) or '(none given)'}; "
                                   f"choose from {', '.join(METRICS)}")
        if options["bertscore_layers"] is not None and options["bertscore_layers"] < 1:
            raise CommandError("--bertscore-layers must be at least 1")
        round_id = options["round"]
        if round_id is not None and not CollectionRound.objects.filter(
                pk=round_id, task_type__in=task_type_keys_yielding("battles")).exists():
            raise CommandError(f"--round: no pairwise round with id {round_id}")
        judge_battles = None
        if options["judge_json"]:
            try:
                judge_battles = read_judge_file(options["judge_json"])
            except InvalidJudgeFile as error:
                raise CommandError(str(error)) from None

        try:
            report = metric_agreement(
                round_id=round_id, metric_names=names, seed=options["seed"], judge_battles=judge_battles,
                confidence=options["confidence"], interval=options["interval"],
                metric_options={"bertscore_model": options["bertscore_model"] or os.environ.get("BERTSCORE_MODEL"),
                                "bertscore_layers": options["bertscore_layers"]},
                progress=lambda message: self.stderr.write(message),
            )
        except ServiceError as error:
            raise CommandError(error.message) from None

        counts = report.counts
        self.stdout.write(
            f"{counts['compared']} model-vs-model pairs compared ({counts['completed_items']} completed items; "
            f"left out: {counts['excluded_against_reference']} against the reference, "
            f"{counts['excluded_even_split']} even splits, {counts['excluded_without_reference']} without a "
            "verified reference)"
        )
        if judge_battles is not None:
            self.stdout.write(
                f"judge: {counts['judge_pairs_matched']} pairs matched ({counts['judge_ties']} ties broken at random), "
                f"{counts['judge_battles_unmatched']} of {counts['judge_battles']} judge battles match no compared pair"
            )
        self.stdout.write(format_table(report))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as out:
                json.dump(report.to_dict(), out, indent=2, allow_nan=False, ensure_ascii=False)
                out.write("\n")
            self.stdout.write(f"wrote {options['json_path']}")
        if options["plot_path"]:
            plot_metric_agreement(report.result, options["plot_path"])
            self.stdout.write(f"wrote {options['plot_path']}")
