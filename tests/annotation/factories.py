"""Small builders of benchmark data and crowd rounds for the crowd-work tests."""
from __future__ import annotations

import io
import itertools
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group, User
from PIL import Image as PILImage

from annotation.models import CollectionRound
from annotation.services.rounds import add_items, create_round, open_round
from annotation.services.workers import get_or_create_local_worker
from datasets_app.models import (
    AcceptedReference,
    Caption,
    FamilySeedImage,
    Image,
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
from projects.services import unassigned_project

_counter = itertools.count(1)


def png_bytes(color: str = "red", size=(64, 48)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def make_image(*, stored: bool = False, color: str = "red", project=None) -> Image:
    """An image of ``project`` (without one: of the project ``unassigned``, like data a command loads
    without --project)."""
    project = project or unassigned_project()
    n = next(_counter)
    if stored:
        # A distinct size per call keeps the bytes (and so the SHA-256) distinct.
        return store_image(project=project, content=png_bytes(color, size=(40 + n, 30)), license="CC0-1.0",
                           creator="tests")
    return Image.objects.create(project=project, url=f"https://images.example.org/{n}.png", license="CC0-1.0",
                                creator="tests")


def make_family(*, name: str | None = None, multi: bool = False, stored_images: bool = False,
                project=None) -> InstructionFamily:
    family = InstructionFamily.objects.create(
        project=project or unassigned_project(),
        name=name or f"Family {next(_counter)}",
        description="Questions about simple scenes.",
        is_multi_image=multi,
        seed_instruction="How many shapes are there?",
        seed_response="There are three shapes.",
    )
    FamilySeedImage.objects.create(family=family, image=make_image(stored=stored_images, project=family.project),
                                   position=0)
    return family


def make_instance(
    *, family: InstructionFamily | None = None, instruction: str | None = None, images: int = 1,
    captions: bool = True, stored_images: bool = False,
) -> Instance:
    family = family or make_family(multi=images > 1, stored_images=stored_images)
    instruction = instruction or f"Describe scene {next(_counter)}."
    image_rows = [make_image(stored=stored_images, project=family.project) for _ in range(images)]
    instance = Instance.objects.create(
        family=family,
        instruction=instruction,
        source=Source.RESEARCHER,
        status=Instance.Status.AWAITING_VERIFICATION if captions else Instance.Status.AWAITING_CAPTION,
        content_key=Instance.compute_content_key(family.name, instruction, [str(i.pk) for i in image_rows]),
    )
    for position, image in enumerate(image_rows):
        InstanceImage.objects.create(instance=instance, image=image, position=position)
        if captions:
            Caption.objects.create(
                instance=instance, position=position, kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                text=f"Caption {position} of {instruction}", source=Source.RESEARCHER,
            )
    return instance


def make_candidate(*, instance: Instance | None = None, text: str = "Three shapes.") -> ReferenceCandidate:
    return ReferenceCandidate.objects.create(
        instance=instance or make_instance(), text=text, model_name="gpt-4", source=Source.LLM
    )


def make_project_outputs(*, project, instances: int = 3, models=("alpha", "beta", "gamma"),
                         references: bool = False, stored_images: bool = False) -> list[Instance]:
    """Instances of one new family of ``project``, each with an output per model (and a reference)."""
    family = make_family(project=project, stored_images=stored_images)
    made = []
    for _ in range(instances):
        instance = make_instance(family=family, stored_images=stored_images)
        make_outputs(instance=instance, models=models)
        if references:
            make_reference(instance=instance)
        made.append(instance)
    return made


def make_outputs(*, instance: Instance, models=("model-x", "model-y")) -> list[ModelOutput]:
    return [
        ModelOutput.objects.create(instance=instance, model_name=name, text=f"{name} says something.")
        for name in models
    ]


def make_reference(*, instance: Instance, text: str = "The reference answer.") -> AcceptedReference:
    return AcceptedReference.objects.create(
        instance=instance, text=text, origin=AcceptedReference.Origin.HUMAN_WRITTEN
    )


def make_review_set(*, language: str = "en", stored_images: bool = False, texts: list[str] | None = None,
                    project=None) -> ReviewSet:
    project = project or unassigned_project()
    review_set = ReviewSet.objects.create(
        project=project, external_id=f"set-{next(_counter)}", image=make_image(stored=stored_images, project=project),
        category="art", language=language,
    )
    texts = texts or [f"Review level {rank}." for rank in range(1, 6)]
    for rank, text in enumerate(texts, start=1):
        Review.objects.create(review_set=review_set, prompt_rank=rank, text=text)
    return review_set


def make_worker_user(username: str | None = None, password: str = "work-pass-123") -> User:
    user = User.objects.create_user(username=username or f"worker{next(_counter)}", password=password)
    group, _ = Group.objects.get_or_create(name=settings.ANNOTATION_WORKER_GROUP)
    user.groups.add(group)
    return user


def make_worker(username: str | None = None):
    return get_or_create_local_worker(user=make_worker_user(username))


def make_round(
    *, task_type: str, targets, workers_per_item: int = 1, open: bool = True, language: str = "en",
    gold_answers=None, **options,
) -> CollectionRound:
    round = create_round(
        name=f"{task_type} round {next(_counter)}", task_type=task_type, workers_per_item=workers_per_item,
        language=language, reward_per_task=options.pop("reward_per_task", Decimal("0.50")), **options,
    )
    add_items(round=round, targets=targets, gold_answers=gold_answers)
    if open:
        open_round(round=round)
    round.refresh_from_db()
    return round
