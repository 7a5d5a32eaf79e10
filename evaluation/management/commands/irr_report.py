"""``manage.py irr_report``: IRR agreement filtering, threshold sweep and model correlation.

Thin on purpose: read the CSV files (or, with ``--from-db``, the crowd's rankings and the stored model
scores), call ``stats.irr.irr_report``, write the results.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kernel.csv_cells import frame_to_csv
from stats import irr


def format_frame(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    return frame.to_string(index=False, float_format=lambda value: f"{value:.3f}", na_rep="-")


def models_with_reference(report: irr.IRRReport) -> pd.DataFrame:
    """Models table with the human-human row appended, as in the paper's Table 2."""
    human = report.human_reference.copy()
    human.insert(0, irr.MODEL, "Human (reference)")
    return pd.concat([report.models, human], ignore_index=True) if report.models is not None else human


class Command(BaseCommand):
    help = (
        "IRR report from long-format CSV files, or from the database (--from-db): per-item best annotator "
        "pair and keep decision, the "
        "threshold sweep (paper Table 4 / Figure 4), model correlation with the top-agreeing annotators "
        "(Table 2), prompt rank vs human rank (Figure 3) and each model counted as an extra annotator."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rankings", metavar="FILE",
                            help="CSV: item_id, annotator_id, review_id, rank [, language, prompt_rank]")
        parser.add_argument("--from-db", action="store_true",
                            help="rankings from the crowd's ranking rounds and the model scores stored by irr_rank")
        parser.add_argument("--round", type=int, metavar="ROUND_ID",
                            help="with --from-db: only this ranking round's judgments")
        parser.add_argument("--model-scores", metavar="FILE",
                            help="CSV: item_id, model, review_id, score (lower is better) or rank [, language]")
        parser.add_argument("--threshold", type=float, default=irr.DEFAULT_THRESHOLD,
                            help=f"keep items whose best-pair rho is at least this (default {irr.DEFAULT_THRESHOLD})")
        parser.add_argument("--json", dest="json_path", metavar="OUT", help="write the report as JSON")
        parser.add_argument("--csv-dir", metavar="DIR", help="write one CSV per table into DIR")
        parser.add_argument("--plot", dest="plot_path", metavar="OUT.png", help="write the sweep figure as PNG")

    def handle(self, *args, **options) -> None:
        threshold = options["threshold"]
        if not (math.isfinite(threshold) and -1.0 <= threshold <= 1.0):
            raise CommandError(f"--threshold must lie in [-1, 1], got {threshold}")
        if bool(options["rankings"]) == bool(options["from_db"]):
            raise CommandError("give either --rankings FILE or --from-db")
        if options["from_db"] and options["model_scores"]:
            raise CommandError("--model-scores is for files; with --from-db the stored scores are used")
        if options["round"] is not None and not options["from_db"]:
            raise CommandError("--round needs --from-db")
        sources: dict[str, str] = {}  # the core's source names -> file names, for error messages
        try:
            if options["from_db"]:
                rankings, model_scores = self.database_inputs(options["round"])
            else:
                rankings_path = Path(options["rankings"])
                scores_path = Path(options["model_scores"]) if options["model_scores"] else None
                sources = {irr.RANKINGS_SOURCE: str(rankings_path), irr.MODEL_SCORES_SOURCE: str(scores_path)}
                rankings = irr.read_rankings_csv(rankings_path, source=str(rankings_path))
                model_scores = irr.read_model_scores_csv(scores_path, source=str(scores_path)) if scores_path else None
            report = irr.irr_report(rankings, model_scores, threshold=threshold)
        except irr.IRRInputError as error:
            raise CommandError(error.describe(sources.get(error.source))) from None

        # Everything is rendered before anything is written, so a failure leaves no partial output.
        outputs: dict[Path, bytes] = {}
        if options["json_path"]:
            text = json.dumps(irr.report_json(report), ensure_ascii=False, indent=2, allow_nan=False)
            outputs[Path(options["json_path"])] = (text + "\n").encode("utf-8")
        csv_dir = Path(options["csv_dir"]) if options["csv_dir"] else None
        if csv_dir is not None:
            for name, frame in irr.report_tables(report).items():
                outputs[csv_dir / f"{name}.csv"] = frame_to_csv(frame, index=False).encode("utf-8")
        if options["plot_path"]:
            buffer = io.BytesIO()
            irr.plot_sweep(report, buffer)
            outputs[Path(options["plot_path"])] = buffer.getvalue()
        for path in outputs:
            if path.parent != csv_dir and not path.parent.is_dir():
                raise CommandError(f"{path}: the folder {path.parent} does not exist")
        if csv_dir is not None:
            csv_dir.mkdir(parents=True, exist_ok=True)
        for path, content in outputs.items():
            path.write_bytes(content)

        self.print_report(report, verbosity=options["verbosity"])
        for path in outputs:
            self.stdout.write(f"wrote {path}")

    @staticmethod
    def database_inputs(round_id: int | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        """Crowd rankings (with prompt ranks) and the stored model scores of the ranked review sets."""
        from annotation.models import CollectionRound
        from kernel.errors import ServiceError
        from evaluation.selectors import irr_database_inputs

        round = None
        if round_id is not None:
            round = CollectionRound.objects.filter(pk=round_id).first()
            if round is None:
                raise CommandError(f"--round: no collection round with id {round_id}")
        try:
            return irr_database_inputs(round=round)
        except ServiceError as error:
            raise CommandError(error.message) from None

    def print_report(self, report: irr.IRRReport, *, verbosity: int) -> None:
        result = report.agreement
        write = self.stdout.write
        write(f"IRR agreement: {len(result.best_rho)} items, {int(result.evaluable.sum())} evaluable "
              f"(at least 2 annotators), {int(result.kept.sum())} kept at best-pair rho >= {result.threshold:g}")
        if verbosity >= 2:
            write("\nItems\n" + format_frame(result.items_frame()))
        write("\nThreshold sweep (paper Table 4 / Figure 4; 'none' = every item, '<0' = every evaluable item)")
        write(format_frame(report.sweep_by_language if report.sweep_by_language is not None else report.sweep))
        write(f"\nCorrelation with the top-agreeing annotator pair, mean over kept items (threshold "
              f"{result.threshold:g})")
        write(format_frame(models_with_reference(report)))
        if report.prompt is not None:
            write("\nPrompt rank vs human rank, all items (Figure 3)")
            write(format_frame(report.prompt.by_prompt_rank))
            write("\nrho(prompt rank, annotator ranking) per annotator")
            write(format_frame(report.prompt.by_annotator))
        for model, (annotator, sweep, sweep_by_language) in report.extra_annotator.items():
            write(f"\nSweep with {model!s} counted as an extra annotator ({annotator})")
            write(format_frame(sweep_by_language if sweep_by_language is not None else sweep))
