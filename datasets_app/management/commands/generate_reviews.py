import sys
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from datasets_app.review_generation import TEMPLATE_NAMES, generate_review_sets, images_for_generation
from llm.config import LLMNotConfigured


def parse_budget(value: str) -> Decimal:
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"--budget must be an amount in USD, got {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise CommandError(f"--budget must be a non-negative amount in USD, got {value!r}")
    return amount


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
        cap = None if budget is None else parse_budget(budget)
        languages = language or ["en", "ja"]
        try:
            images = images_for_generation(categories=category, image_ids=image_ids)
        except LookupError as exc:
            raise CommandError(f"--image-ids: {exc}") from None
        if not images:
            raise CommandError("no images to write reviews for (images need a category, or give --image-ids)")
        bars: list[tqdm] = []  # made when the first batch starts, so a setup error prints no empty bar

        def more(count: int) -> None:
            if not bars:
                bars.append(tqdm(total=0, unit="request", disable=options["verbosity"] == 0, file=sys.stderr))
            bars[0].total += count
            bars[0].refresh()

        try:
            report = generate_review_sets(
                images=images, languages=languages, model=model, budget_usd=cap, seed=seed,
                on_requests=more, progress=lambda result: bars[0].update(),
            )
        except LLMNotConfigured as exc:
            raise CommandError(f"The LLM is not configured: {exc}") from None
        finally:
            for bar in bars:
                bar.close()
        for failure in report.failures:
            self.stderr.write(f"image {failure.image_id} ({failure.language}): no review set stored: {failure.reason}")
        style = self.style.SUCCESS if not report.failures else self.style.WARNING
        self.stdout.write(style(report.summary()))
