from django.core.management.base import BaseCommand, CommandError

from datasets_app.review_generation import TEMPLATE_NAMES, generate_review_sets, images_for_generation
from llm.cli import parse_budget, run_step, write_step_report
from llm.params import LLMRunParams


class Command(BaseCommand):
    help = (
        "IRR: ask a vision-capable LLM for five reviews per image and language (levels 1..5: objective and "
        "reasonable … subjective and containing an error) and store them as review sets. Images with a "
        "category (or the given ids); pairs that already have a generated set are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--category", action="append", default=[], metavar="C",
                            help="only images of this category (repeatable)")
        parser.add_argument("--language", nargs="+", choices=sorted(TEMPLATE_NAMES), default=None,
                            help="languages to write reviews in (default: en ja)")
        parser.add_argument("--image-ids", nargs="+", type=int, default=[], metavar="ID",
                            help="these images (by id) instead of every image with a category")
        parser.add_argument("--model", help="model name (default: LLM_MODEL)")
        parser.add_argument("--budget", type=str, metavar="USD", help="stop before spending more than this")
        parser.add_argument("--seed", type=int, help="sent to the server; a new seed asks afresh instead of reusing "
                                                     "cached answers (e.g. after failures)")

    def handle(self, *args, category, language, image_ids, model, budget: str | None, seed, **options):
        cap = parse_budget(budget)
        languages = language or ["en", "ja"]
        try:
            images = images_for_generation(categories=category, image_ids=image_ids)
        except LookupError as exc:
            raise CommandError(f"--image-ids: {exc}") from None
        if not images:
            raise CommandError("no images to write reviews for (images need a category, or give --image-ids)")
        report = run_step(
            generate_review_sets, verbosity=options["verbosity"], images=images, languages=languages, seed=seed,
            llm=LLMRunParams(model=model, budget_usd=cap),
        )
        write_step_report(self, report, subject=lambda failure: f"image {failure.image_id} ({failure.language})",
                          failed="no review set stored")
