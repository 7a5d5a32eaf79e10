"""Demo collection rounds for `make demo`: one open round of each task type, ready for local workers.

Uses the benchmark data already in the database (the demo families, instances, outputs and review
sets) and draws with Pillow whatever a round still needs, recorded as CC0-1.0 works of
"crowdbench demo".
"""
from __future__ import annotations

import io
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from PIL import Image as PILImage
from PIL import ImageDraw

from datasets_app.models import (
    AcceptedReference,
    Caption,
    FamilySeedImage,
    Instance,
    InstanceImage,
    InstructionFamily,
    ModelOutput,
    ReferenceCandidate,
    Review,
    ReviewSet,
    Source,
)
from datasets_app.services import store_image

from . import services
from .models import CollectionRound

DEMO_PREFIX = "Demo: "
DEMO_LICENSE = "CC0-1.0"
DEMO_CREATOR = "crowdbench demo"
DEMO_REVIEWS = {
    "en": [
        "Three simple shapes, red, blue and green, stand on a white background.",
        "A cheerful, tidy composition; the bold colours are pleasant to look at.",
        "The picture shows four shapes, all of them squares.",
        "An ugly picture that nobody would ever want to see.",
        "I love the purple circle in the middle, it is the best part.",
    ],
    "ja": [
        "白い背景に赤、青、緑の三つの図形が描かれています。",
        "はっきりした色づかいで、見ていて楽しい整った構図です。",
        "画像には四つの図形があり、すべて四角形です。",
        "誰も見たくないような醜い絵です。",
        "真ん中の紫の円がとても素敵で、一番の見どころです。",
    ],
}


def _drawn_image(colors: list[str], *, category: str = ""):
    canvas = PILImage.new("RGB", (320, 200), "white")
    pen = ImageDraw.Draw(canvas)
    for index, color in enumerate(colors):
        left = 20 + index * 100
        pen.ellipse((left, 50, left + 80, 130), fill=color, outline="black", width=2)
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return store_image(content=buffer.getvalue(), license=DEMO_LICENSE, creator=DEMO_CREATOR, category=category)


def _demo_family() -> InstructionFamily:
    family = InstructionFamily.objects.filter(seed_image_links__isnull=False).order_by("id").first()
    if family is not None:
        return family
    family, _created = InstructionFamily.objects.get_or_create(
        name="Demo: colour questions",
        defaults={
            "description": "Questions about the colours and order of circles.",
            "origin": InstructionFamily.Origin.NEW,
            "seed_instruction": "Which colour is the circle in the middle?",
            "seed_response": "The circle in the middle is blue.",
        },
    )
    if not family.seed_image_links.exists():
        FamilySeedImage.objects.create(family=family, image=_drawn_image(["red", "blue", "green"]), position=0)
    return family


def _new_instance(*, family: InstructionFamily, instruction: str, colors: list[str], status: str) -> Instance:
    image = _drawn_image(colors)
    instance = Instance.objects.create(
        family=family,
        instruction=instruction,
        source=Source.RESEARCHER,
        status=status,
        content_key=Instance.compute_content_key(family.name, instruction, [image.sha256]),
    )
    InstanceImage.objects.create(instance=instance, image=image, position=0)
    return instance


def _caption_targets(family) -> list[Instance]:
    waiting = list(Instance.objects.filter(status=Instance.Status.AWAITING_CAPTION).order_by("id")[:3])
    if waiting:
        return waiting
    return [
        _new_instance(
            family=family, instruction="How many circles are there, and which colour is on the right?",
            colors=["orange", "purple", "teal"], status=Instance.Status.AWAITING_CAPTION,
        )
    ]


def _verification_targets(family) -> list[ReferenceCandidate]:
    pending = list(
        ReferenceCandidate.objects.filter(verifications__isnull=True).order_by("id")[:3]
    )
    if pending:
        return pending
    instance = _new_instance(
        family=family, instruction="Which colour is the circle on the left?",
        colors=["red", "yellow"], status=Instance.Status.AWAITING_VERIFICATION,
    )
    Caption.objects.create(
        instance=instance, position=0, kind=Caption.Kind.INSTRUCTION_CONDITIONED, source=Source.RESEARCHER,
        text="Two circles on a white background: a red one on the left and a yellow one on the right.",
    )
    return [
        ReferenceCandidate.objects.create(
            instance=instance, text="The circle on the left is red.", model_name="demo-llm", source=Source.LLM
        )
    ]


def _pairwise_targets(family) -> list[tuple]:
    targets = []
    for instance in Instance.objects.filter(model_outputs__isnull=False).distinct().order_by("id")[:3]:
        outputs = list(instance.model_outputs.order_by("model_name"))
        if len(outputs) >= 2:
            targets.append((outputs[0], outputs[1]))
        reference = AcceptedReference.objects.filter(instance=instance).first()
        if reference is not None:
            targets.append((outputs[0], reference))
    if targets:
        return targets
    instance = _new_instance(
        family=family, instruction="Name the colours of the circles from left to right.",
        colors=["red", "blue", "green"], status=Instance.Status.VERIFIED,
    )
    reference = AcceptedReference.objects.create(
        instance=instance, text="Red, blue and green.", origin=AcceptedReference.Origin.HUMAN_WRITTEN
    )
    first = ModelOutput.objects.create(instance=instance, model_name="demo-model-a", text="Red, blue, green.")
    second = ModelOutput.objects.create(instance=instance, model_name="demo-model-b", text="Some circles.")
    return [(first, second), (first, reference)]


def _review_sets(language: str) -> list[ReviewSet]:
    complete = [
        review_set
        for review_set in ReviewSet.objects.filter(language=language).order_by("id")[:5]
        if review_set.reviews.count() == ReviewSet.REVIEWS_PER_SET
    ]
    if complete:
        return complete
    review_set = ReviewSet.objects.create(
        external_id=f"demo-crowd-{language}", image=_drawn_image(["red", "blue", "green"], category="art"),
        category="art", language=language, source=Source.RESEARCHER,
    )
    Review.objects.bulk_create(
        Review(review_set=review_set, prompt_rank=rank, text=text)
        for rank, text in enumerate(DEMO_REVIEWS[language], start=1)
    )
    return [review_set]


@transaction.atomic
def create_demo_rounds(*, researcher=None, worker_users=()) -> dict[str, CollectionRound]:
    """One open round per task type (ranking in English and in Japanese); the given users become
    local workers. Calling it again returns the rounds made the first time."""
    group, _created = Group.objects.get_or_create(name=settings.ANNOTATION_WORKER_GROUP)
    for user in worker_users:
        user.groups.add(group)
        worker = services.get_or_create_local_worker(user=user)
        if not worker.languages:
            # The demo workers rank in both languages; real ones state what they speak.
            worker.languages = ["en", "ja"]
            worker.save(update_fields=["languages"])

    family = _demo_family()
    plans = {
        "instruction_generation": ("Write a new instruction", "en", 2, lambda: [family]),
        "caption": ("Caption images for an instruction", "en", 1, lambda: _caption_targets(family)),
        "verification": ("Check answers", "en", 3, lambda: _verification_targets(family)),
        "pairwise": ("Which response is better?", "en", 5, lambda: _pairwise_targets(family)),
        "ranking": ("Rank image reviews", "en", 3, lambda: _review_sets("en")),
        "ranking_ja": ("画像レビューの順位付け", "ja", 3, lambda: _review_sets("ja")),
    }
    rounds = {}
    for key, (title, language, workers_per_item, targets) in plans.items():
        name = DEMO_PREFIX + title
        existing = CollectionRound.objects.filter(name=name).first()
        if existing is not None:
            rounds[key] = existing
            continue
        round = services.create_round(
            name=name,
            task_type=key.removesuffix("_ja"),
            created_by=researcher,
            language=language,
            workers_per_item=workers_per_item,
            reward_per_task=Decimal("0.50"),
            target_hourly_wage=Decimal("18.00"),
            time_limit_seconds=1800,
            # IRR: each language's reviews are ranked by speakers of that language.
            qualification_rules={"language_matched": True} if key.startswith("ranking") else None,
        )
        services.add_items(round=round, targets=targets())
        rounds[key] = services.open_round(round=round)
    return rounds
