"""``manage.py judge``: the LLM pairwise judge over stored model outputs (DESIGN §3.3)."""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.judge.services import JudgeInputError, judge_pairs
from llm.cli import parse_budget, run_step, write_step_report
from llm.params import LLMRunParams


class Command(BaseCommand):
    help = (
        "Judge every pair of the given models with an LLM (both orderings of each pair) on every instance "
        "where both have an output, store the battles (source 'judge') and report the position bias and "
        "Elo ratings. Re-running sends nothing already answered."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--models", required=True, metavar="M1,M2[,...]",
                            help="comma-separated model names, as stored with their outputs")
        parser.add_argument("--reference", action="store_true",
                            help="reference-backed judge (GPT4-ref): show the human-verified reference in every "
                                 "prompt, and also judge each model against the reference")
        parser.add_argument("--against-reference", action="store_true",
                            help="also judge each model against the accepted reference, with the reference-free "
                                 "prompt (the paper's way to place the reference in the ratings)")
        parser.add_argument("--judge-model", metavar="NAME", help="the judging model (default: LLM_MODEL)")
        parser.add_argument("--extractor-model", metavar="NAME",
                            help="a cheaper model that extracts verdicts missing from answers (default: the judge)")
        parser.add_argument("--budget", metavar="USD", help="stop before spending more than this many USD")
        parser.add_argument("--json", dest="json_path", metavar="OUT",
                            help="write the battles, the position-bias report and the ratings as JSON")

    def handle(self, *args, models, reference, against_reference, judge_model, extractor_model, budget, json_path,
               verbosity, **options) -> None:
        cap = parse_budget(budget)
        names = [name.strip() for name in models.split(",") if name.strip()]
        if not names:
            raise CommandError("--models: give comma-separated model names")
        out = Path(json_path) if json_path else None
        if out is not None and not out.parent.is_dir():
            raise CommandError(f"--json: the folder {out.parent} does not exist")
        try:
            report = run_step(
                judge_pairs, verbosity=verbosity, models=names, with_reference=reference,
                against_reference=reference or against_reference, llm=LLMRunParams(model=judge_model, budget_usd=cap),
                extractor_model=extractor_model,
            )
        except JudgeInputError as error:
            raise CommandError(error.message) from None
        write_step_report(
            self, report, failed="not judged",
            subject=lambda failure: f"instance {failure.instance_id}, {failure.model_a} vs {failure.model_b}"
                                    + (f" (query {failure.query})" if failure.query else ""),
        )
        if out is not None:
            with out.open("w", encoding="utf-8") as handle:
                json.dump(report.as_json(), handle, indent=2, allow_nan=False)
                handle.write("\n")
            self.stdout.write(f"wrote {out}")
