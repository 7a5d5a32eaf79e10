"""IRR review generation: five reviews of an image, one per level, written by a vision-capable LLM.

For each (image, language) the model gets the image and our prompt template (one per language,
versioned through ``llm.services.ensure_template``) and answers with a JSON object holding exactly
five reviews, levels 1..5 (the prompt rank):

1 objective and reasonable, 2 subjective but reasonable, 3 objective but unreasonable,
4 subjective and unreasonable, 5 subjective and containing an error.

An answer that does not parse is followed up once with a corrective message (a new request, so the
response cache cannot hand back the same bad answer); if that fails too the pair is reported as
failed and nothing is stored for it. Each accepted answer becomes one ReviewSet with its five
Reviews in one transaction. An (image, language) that already has a generated set is skipped, so a
re-run only asks for what is missing.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from llm.client import chat_request, configured_model
from llm.images import data_url
from llm.services import ensure_template, render_template
from llm.params import LLMRunParams
from llm.steps import Answer, LLMStep, StepReport

from .image_urls import encode_url
from .models import Image, Language, Review, ReviewSet, Source

PURPOSE = "irr_review"
LEVELS = tuple(range(1, ReviewSet.REVIEWS_PER_SET + 1))
MAX_TOKENS = 3000  # five reviews of a paragraph each, with room for Japanese (more tokens per idea)

TEMPLATE_NAMES = {"en": "irr-review-generation-en", "ja": "irr-review-generation-ja"}

# Level wording follows the IRR paper (Appendix A.1 / D.1); the JSON shape is ours, so the answer
# can be checked strictly instead of split on numbering.
TEMPLATE_TEXTS = {
    "en": (
        "You are an art and photography critic. Look at the image (category: {category}) and write five "
        "different critical reviews of it in English, one for each of these levels:\n"
        "1. Objective and reasonable\n"
        "2. Subjective but reasonable\n"
        "3. Objective but unreasonable\n"
        "4. Subjective and unreasonable\n"
        "5. Subjective and containing an error (something that is not true of the image)\n"
        "Each review is one paragraph of three to five sentences that comments on what works in the image "
        "and what could be improved. Do not mention the level inside the review text.\n"
        "Answer with JSON only, exactly in this shape:\n"
        '{"reviews": [{"level": 1, "text": "..."}, {"level": 2, "text": "..."}, {"level": 3, "text": "..."}, '
        '{"level": 4, "text": "..."}, {"level": 5, "text": "..."}]}'
    ),
    "ja": (
        "あなたは美術と写真の批評家です。画像（カテゴリ：{category}）を見て、次の五つの水準それぞれについて、"
        "異なる批評レビューを日本語で一つずつ書いてください。\n"
        "1. 客観的で妥当\n"
        "2. 主観的だが妥当\n"
        "3. 客観的だが妥当でない\n"
        "4. 主観的で妥当でない\n"
        "5. 主観的で誤りを含む（画像について事実でないことを含む）\n"
        "各レビューは三〜五文の一段落とし、画像の良い点と改善できる点について述べてください。"
        "レビュー本文の中で水準には触れないでください。\n"
        "JSON のみで、次の形のとおりに答えてください：\n"
        '{"reviews": [{"level": 1, "text": "..."}, {"level": 2, "text": "..."}, {"level": 3, "text": "..."}, '
        '{"level": 4, "text": "..."}, {"level": 5, "text": "..."}]}'
    ),
}

CORRECTIONS = {
    "en": (
        "Your answer could not be used: {problem}. Reply again with JSON only, in the shape "
        '{"reviews": [{"level": 1, "text": "..."}, ...]} with exactly five reviews, levels 1 to 5, '
        "each with a non-empty text in English."
    ),
    "ja": (
        "回答を利用できませんでした：{problem}。JSON のみで、"
        '{"reviews": [{"level": 1, "text": "..."}, ...]} の形で、水準 1〜5 のレビューをちょうど五つ、'
        "それぞれ空でない日本語の本文で、もう一度答えてください。"
    ),
}

_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class ReviewAnswerError(ValueError):
    """The model's answer is not five reviews for levels 1..5."""


def parse_review_answer(text: str) -> dict[int, str]:
    """The five review texts by level from a JSON answer; anything else is a ReviewAnswerError.

    A Markdown code fence around the JSON is accepted (models add one even when told not to);
    everything else must be exactly the requested shape.
    """
    fenced = _FENCE.match(text or "")
    body = fenced.group(1) if fenced else (text or "").strip()
    if not body:
        raise ReviewAnswerError("the answer is empty")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReviewAnswerError(f"the answer is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("reviews"), list):
        raise ReviewAnswerError('the answer is not an object with a "reviews" list')
    entries = data["reviews"]
    if len(entries) != len(LEVELS):
        raise ReviewAnswerError(f"expected {len(LEVELS)} reviews, got {len(entries)}")
    reviews: dict[int, str] = {}
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ReviewAnswerError(f"review {position} is not an object")
        level, review_text = entry.get("level"), entry.get("text")
        if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
            raise ReviewAnswerError(f"review {position} has level {level!r}, expected an integer 1..5")
        if level in reviews:
            raise ReviewAnswerError(f"level {level} appears twice")
        if not isinstance(review_text, str) or not review_text.strip():
            raise ReviewAnswerError(f"review {position} (level {level}) has no text")
        reviews[level] = review_text.strip()
    return reviews


def ensure_review_templates() -> dict[str, tuple[str, int]]:
    """Our default prompts as template versions; returns language -> (template name, latest version)."""
    versions = {}
    for language, name in TEMPLATE_NAMES.items():
        template = ensure_template(
            name=name, text=TEMPLATE_TEXTS[language],
            description=f"IRR: five reviews of an image, levels 1..5, in {Language(language).label}.",
        )
        versions[language] = (template.name, template.version)
    return versions


def image_source(image: Image) -> str:
    """What the LLM layer sends: our stored file (it becomes a base64 data URL) or the image's URL."""
    if not image.file:
        return encode_url(image.url)
    try:
        return image.file.path
    except NotImplementedError:  # object storage (MEDIA_STORAGE=s3): no local path, send the bytes
        with image.file.open("rb") as handle:
            return data_url(handle.read())


@dataclass
class GenerationFailure:
    image_id: int
    language: str
    reason: str


@dataclass
class GenerationReport(StepReport):
    skipped_existing: int = 0
    review_set_ids: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.requested} image/language pairs: {self.created} review sets created, "
            f"{self.skipped_existing} already generated, {self.retried} retried, {len(self.failures)} failed; "
            f"{self.requests_summary()}"
        )


def images_for_generation(*, categories: Sequence[str] = (), image_ids: Sequence[int] = ()) -> list[Image]:
    """The images to write reviews for: the given ids (all must exist), else the images with a
    category (restricted to ``categories`` when given)."""
    if image_ids:
        found = {image.pk: image for image in Image.objects.filter(pk__in=image_ids)}
        missing = [str(pk) for pk in image_ids if pk not in found]
        if missing:
            raise LookupError(f"no image with id {', '.join(missing)}")
        images = [found[pk] for pk in dict.fromkeys(image_ids)]
        if categories:
            images = [image for image in images if image.category in categories]
        return images
    queryset = Image.objects.exclude(category="")
    if categories:
        queryset = queryset.filter(category__in=categories)
    return list(queryset.order_by("pk"))


def generate_review_sets(
    *,
    images: Iterable[Image],
    languages: Sequence[str] = ("en", "ja"),
    seed: int | None = None,
    llm: LLMRunParams = LLMRunParams(),
) -> GenerationReport:
    """Ask the model for five reviews per (image, language) not generated yet, and store them.

    Answers are cached by the LLM layer, so re-running after a failure gets the same answer back;
    a ``seed`` (sent to the server) makes new requests and so new answers.
    ``llm.on_requests(n)`` is told how many requests a batch is about to send (first pass, then the
    retries) and ``llm.progress(result)`` is called per finished request, for a progress bar.
    Each set is stored in its image's project. The requests are charged to ``llm.run`` when given
    (its cap applies), otherwise to a new run capped at ``llm.budget_usd``.
    Raises ``LLMNotConfigured`` (nothing written) when no LLM server or model is set.
    """
    unknown = [language for language in languages if language not in TEMPLATE_NAMES]
    if unknown:
        raise ValueError(f"no review prompt for language(s): {', '.join(unknown)}")
    model = llm.model
    model_name = configured_model(model, llm.client)
    images = list(images)
    report = GenerationReport(requested=len(images) * len(languages))
    already = set(
        ReviewSet.objects.filter(image__in=images, language__in=languages, source=Source.LLM)
        .values_list("image_id", "language")
    )
    pairs = [(image, language) for image in images for language in languages]
    todo = [(image, language) for image, language in pairs if (image.pk, language) not in already]
    report.skipped_existing = len(pairs) - len(todo)
    if not todo:
        return report

    ensure_review_templates()
    step = LLMStep(report=report, purpose=PURPOSE, llm=llm,
                   failure=lambda pair, reason: GenerationFailure(pair[0].pk, pair[1], reason))
    step.start(name=f"IRR review generation ({model_name}, {len(todo)} image/language pairs)")
    sampling = {"temperature": 0} if seed is None else {"temperature": 0, "seed": seed}
    jobs = []
    for image, language in todo:
        prompt = render_template(TEMPLATE_NAMES[language], category=image.category or "unspecified")
        job = step.job((image, language), lambda: chat_request(
            prompt, images=[image_source(image)], model=model, purpose=PURPOSE, max_tokens=MAX_TOKENS, **sampling,
        ), prompt=prompt)
        if job is not None:
            jobs.append(job)
    answers = step.ask_parsed(
        jobs,
        parse=lambda job, text: parse_review_answer(text),
        correction=lambda job, problem: CORRECTIONS[job.subject[1]].replace("{problem}", problem),
        reject_reason="unusable review answer",
    )
    for answer in answers:
        review_set = _store(answer, model_name=model_name)
        report.review_set_ids.append(review_set.pk)
        report.created += 1
    return step.finish()


@transaction.atomic
def _store(answer: Answer, *, model_name: str) -> ReviewSet:
    image, language = answer.job.subject
    prompt = answer.job.prompt
    review_set = ReviewSet(
        project_id=image.project_id, image=image, category=image.category, language=language, source=Source.LLM,
        generator_model=model_name, prompt_template=prompt.template_name,
        prompt_template_version=prompt.template_version,
    )
    review_set.full_clean()
    review_set.save()
    reviews = [Review(review_set=review_set, prompt_rank=level, text=answer.value[level]) for level in LEVELS]
    for review in reviews:
        review.full_clean(exclude=["review_set"])
    Review.objects.bulk_create(reviews)
    return review_set
