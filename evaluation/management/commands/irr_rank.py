"""``manage.py irr_rank``: run an IRR model ranker over the review sets in the database and store the scores."""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from datasets_app.models import Language
from evaluation.rankers.registry import RANKERS, make_ranker, ranker_class
from evaluation.rankers.uploaded import UploadedScoresError
from evaluation.selectors import review_items
from evaluation.services import ScoreStoreError, rank_and_store
from kernel.csv_cells import frame_to_csv
from llm.cli import not_configured, parse_budget
from llm.config import LLMConfig, LLMNotConfigured
from llm.params import LLMRunParams
from llm.services import create_run


def llm_rankers() -> list[str]:
    return [name for name in RANKERS if ranker_class(name).uses_llm]


class Command(BaseCommand):
    help = (
        "IRR: rank the reviews of the review sets in the database with a model (perplexity under a local "
        "model, from a completions server or given the image from a vLLM vision-language model, a chat "
        "model's ranking, CLIP image-text similarity, or uploaded scores) and store the scores for "
        "irr_report --from-db."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--ranker", required=True, choices=RANKERS.names())
        parser.add_argument("--model", help="server model name (default LLM_MODEL); local model folder or GGUF "
                                            "file (default SmolLM2-135M); local CLIP model folder (clip-score, "
                                            "required); for uploaded, the model to read")
        parser.add_argument("--language", choices=Language.values, help="only review sets in this language")
        parser.add_argument("--review-sets", nargs="+", type=int, metavar="ID", help="only these review sets")
        parser.add_argument("--scores", metavar="FILE", help="uploaded: CSV item_id, model, review_id, score|rank")
        parser.add_argument("--out", metavar="CSV", help="also write the scores to this CSV file")
        parser.add_argument("--no-image", action="store_true", help="chat: do not send the image")
        parser.add_argument("--seed", type=int, default=0, help="chat: seed of the order reviews are shown in")
        parser.add_argument("--budget", metavar="USD", help="server-perplexity, chat: spending cap")

    def handle(self, *args, **options) -> None:
        name = options["ranker"]
        ranker_type = ranker_class(name)
        if ranker_type.needs_scores_file and not options["scores"]:
            raise CommandError(f"--ranker {name} needs --scores FILE")
        if options["scores"] and not ranker_type.needs_scores_file:
            raise CommandError("--scores is only for --ranker " + ", ".join(
                other for other in RANKERS if ranker_class(other).needs_scores_file))
        if options["budget"] is not None and not ranker_type.uses_llm:
            raise CommandError("--budget is only for the rankers that call an LLM server: " + ", ".join(llm_rankers()))
        out = Path(options["out"]) if options["out"] else None
        if out is not None and not out.parent.is_dir():
            raise CommandError(f"{out}: the folder {out.parent} does not exist")
        budget = parse_budget(options["budget"])
        items = review_items(language=options["language"], review_set_ids=options["review_sets"])
        if not items:
            raise CommandError("no review sets to rank")

        run = None
        if ranker_type.uses_llm:
            try:
                config = LLMConfig.from_settings()
                config.require_server()
                model = config.resolve_model(options["model"])
            except LLMNotConfigured as exc:
                raise not_configured(exc) from None
            run = create_run(name=f"IRR {name} ranking ({model}, {len(items)} review sets)", budget_usd=budget,
                             purpose=f"irr_{name.replace('-', '_')}")
        # One bar per LLM request: one per review for server perplexity, one per item (plus retries) for chat.
        bar = tqdm(total=0, unit="request", disable=options["verbosity"] == 0 or run is None, file=sys.stderr)

        def more_requests(count: int) -> None:
            bar.total += count
            bar.refresh()

        try:
            ranker = make_ranker(name, model=options["model"], scores_path=options["scores"],
                                 with_image=not options["no_image"], seed=options["seed"],
                                 llm=LLMRunParams(run=run, progress=lambda result: bar.update(),
                                                  on_requests=more_requests))
            outcome = rank_and_store(ranker=ranker, ranker_kind=name, items=items)
        except (UploadedScoresError, ScoreStoreError, ValueError, RuntimeError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        if out is not None:
            frame_to_csv(outcome.scores, out, index=False)
        for missing in outcome.unscored:
            self.stderr.write(f"review set {missing.item_id}: not scored: {missing.reason}")
        models = ", ".join(sorted(map(str, outcome.scores["model"].unique()))) or "-"
        scored = outcome.scores["item_id"].nunique()
        self.stdout.write(self.style.SUCCESS(
            f"{name}: {scored} of {len(items)} review sets scored ({outcome.stored} review scores stored; "
            f"model {models})"))
        if out is not None:
            self.stdout.write(f"wrote {out}")
