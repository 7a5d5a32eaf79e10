"""Demo data for `make demo`: a few families, instances and review sets with images drawn here.

The images are generated with Pillow (simple shape scenes), so pages show pictures offline; they
are recorded as CC0-1.0 works of "crowdbench demo".
"""
from __future__ import annotations

import io
from dataclasses import dataclass

from django.db import transaction
from PIL import Image as PILImage
from PIL import ImageDraw
from datasets_app import instance_status
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
    Verification,
)

from datasets_app.services import store_image
from projects.services import unassigned_project

DEMO_LICENSE = "CC0-1.0"
DEMO_CREATOR = "crowdbench demo"
DEMO_MODELS = ["llava-demo", "blip2-demo", "instructblip-demo"]


@dataclass(frozen=True)
class Shape:
    kind: str  # circle | square | triangle
    color: str
    box: tuple[int, int, int, int]


def draw_scene(shapes: list[Shape], *, size=(320, 240), background="white") -> bytes:
    canvas = PILImage.new("RGB", size, background)
    pen = ImageDraw.Draw(canvas)
    for shape in shapes:
        x0, y0, x1, y1 = shape.box
        if shape.kind == "circle":
            pen.ellipse(shape.box, fill=shape.color, outline="black", width=2)
        elif shape.kind == "square":
            pen.rectangle(shape.box, fill=shape.color, outline="black", width=2)
        else:
            pen.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=shape.color, outline="black")
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def _image(project, shapes: list[Shape], category: str = ""):
    return store_image(
        project=project, content=draw_scene(shapes), license=DEMO_LICENSE, creator=DEMO_CREATOR, category=category
    )


SCENES = {
    "three": [
        Shape("circle", "red", (30, 60, 110, 140)),
        Shape("square", "blue", (140, 50, 230, 140)),
        Shape("triangle", "green", (240, 90, 300, 170)),
    ],
    "two": [Shape("circle", "orange", (60, 60, 160, 160)), Shape("square", "purple", (190, 80, 260, 150))],
    "four": [
        Shape("square", "yellow", (20, 20, 80, 80)),
        Shape("circle", "teal", (120, 30, 190, 100)),
        Shape("triangle", "red", (220, 20, 300, 100)),
        Shape("circle", "navy", (130, 140, 210, 220)),
    ],
}
SCENE_AFTER = [
    Shape("circle", "red", (30, 60, 110, 140)),
    Shape("square", "gold", (140, 50, 230, 140)),
    Shape("triangle", "green", (240, 90, 300, 170)),
]

SINGLE_INSTANCES = [
    (
        "three",
        "How many shapes are in the picture, and which one is the largest?",
        "A white background with three shapes from left to right: a red circle, a larger blue "
        "square in the middle, and a small green triangle on the right.",
        "There are three shapes. The blue square in the middle is the largest.",
    ),
    (
        "two",
        "Which shape is to the left of the other, and what colour is it?",
        "An orange circle on the left and a smaller purple square on the right, on a white background.",
        "The orange circle is to the left of the purple square.",
    ),
    (
        "four",
        "List the colours of the circles in this image.",
        "Four shapes on white: a yellow square top left, a teal circle top middle, a red triangle top "
        "right and a navy circle below the teal one.",
        "The circles are teal and navy.",
    ),
]

MODEL_ANSWERS = {
    "llava-demo": "I can see {n} shapes; the answer depends on their sizes.",
    "blip2-demo": "shapes on a white background",
    "instructblip-demo": "The image shows colourful geometric shapes.",
}

# Instances still in the pipeline: one awaiting its caption, one awaiting its LLM reference (which
# `load_demo` has the embedded model write: demo.llm_step), one whose LLM answer awaits checking.
AWAITING_CAPTION = (
    "two",
    "What colour is the shape on the right, and is it bigger than the other one?",
)
AWAITING_REFERENCE = (
    "three",
    "Which shape is the closest to the green triangle?",
    "A white background with three shapes from left to right: a red circle, a larger blue square in "
    "the middle, and a small green triangle on the right.",
)
AWAITING_VERIFICATION = (
    "four",
    "Which shape is in the top right corner?",
    "Four shapes on white: a yellow square top left, a teal circle top middle, a red triangle top "
    "right and a navy circle below the teal one.",
    "The shape in the top right corner is a red triangle.",
)

REVIEWS = {
    "en": [
        "The picture shows three simple shapes in red, blue and green on a white background.",
        "A cheerful, tidy composition; the bold colours make it pleasant to look at.",
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


@transaction.atomic
def create_demo_data(*, project=None) -> dict[str, int]:
    """Create the demo families, instances and review sets once in ``project`` (the project
    ``unassigned`` when none is given); returns what the project holds. Names are looked up in
    the project only: other projects' rows are neither read nor changed."""
    project = project if project is not None else unassigned_project()
    counting, created = InstructionFamily.objects.get_or_create(
        project=project,
        name="Shape questions",
        defaults=dict(
            description="Questions about the shapes, colours and layout of a simple scene.",
            origin=InstructionFamily.Origin.NEW,
            seed_instruction="How many shapes are in the picture, and which one is the largest?",
            seed_response="There are three shapes. The blue square in the middle is the largest.",
        ),
    )
    if created:
        FamilySeedImage.objects.create(family=counting, image=_image(project, SCENES["three"]), position=0)
        for scene, instruction, caption, reference in SINGLE_INSTANCES:
            _demo_instance(counting, [SCENES[scene]], instruction, [caption], reference)
        _pipeline_instances(counting)

    differences, created = InstructionFamily.objects.get_or_create(
        project=project,
        name="Spot the change",
        defaults=dict(
            description="Two versions of a scene: say what changed between BEFORE and AFTER.",
            is_multi_image=True,
            origin=InstructionFamily.Origin.NEW,
            seed_instruction="Here are a BEFORE and an AFTER image. What changed?",
            seed_response="The square in the middle changed from blue to gold.",
        ),
    )
    if created:
        FamilySeedImage.objects.create(family=differences, image=_image(project, SCENES["three"]), position=0)
        FamilySeedImage.objects.create(family=differences, image=_image(project, SCENE_AFTER), position=1)
        _demo_instance(
            differences,
            [SCENES["three"], SCENE_AFTER],
            "Here are a BEFORE and an AFTER image. What changed?",
            [
                "BEFORE: a red circle, a blue square and a green triangle on white.",
                "AFTER: a red circle, a gold square and a green triangle on white.",
            ],
            "The square in the middle changed from blue to gold.",
        )

    for index, (language, texts) in enumerate(REVIEWS.items(), start=1):
        review_set, created = ReviewSet.objects.get_or_create(
            project=project,
            external_id=f"demo-{index}",
            language=language,
            defaults=dict(image=_image(project, SCENES["three"], category="art"), category="art"),
        )
        if created:
            Review.objects.bulk_create(
                Review(review_set=review_set, prompt_rank=rank, text=text)
                for rank, text in enumerate(texts, start=1)
            )
    return {
        "families": InstructionFamily.objects.filter(project=project).count(),
        "instances": Instance.objects.filter(family__project=project).count(),
        "review_sets": ReviewSet.objects.filter(project=project).count(),
    }


def _bare_instance(family, scenes, instruction, status) -> Instance:
    images = [_image(family.project, shapes) for shapes in scenes]
    instance = instance_status.create_instance(
        family=family,
        instruction=instruction,
        source=Source.RESEARCHER,
        status=status,
        content_key=Instance.compute_content_key(family.name, instruction, [i.sha256 for i in images]),
    )
    for position, image in enumerate(images):
        InstanceImage.objects.create(instance=instance, image=image, position=position)
    return instance


def _pipeline_instances(family) -> None:
    scene, instruction = AWAITING_CAPTION
    _bare_instance(family, [SCENES[scene]], instruction, Instance.Status.AWAITING_CAPTION)
    scene, instruction, caption = AWAITING_REFERENCE
    instance = _bare_instance(family, [SCENES[scene]], instruction, Instance.Status.AWAITING_REFERENCE)
    Caption.objects.create(instance=instance, position=0, kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                           text=caption, source=Source.RESEARCHER)
    scene, instruction, caption, answer = AWAITING_VERIFICATION
    instance = _bare_instance(family, [SCENES[scene]], instruction, Instance.Status.AWAITING_VERIFICATION)
    Caption.objects.create(instance=instance, position=0, kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                           text=caption, source=Source.RESEARCHER)
    ReferenceCandidate.objects.create(instance=instance, text=answer, model_name="gpt-4", source=Source.LLM)


def _demo_instance(family, scenes, instruction, captions, reference) -> Instance:
    instance = _bare_instance(family, scenes, instruction, Instance.Status.VERIFIED)
    Caption.objects.bulk_create(
        Caption(instance=instance, position=p, kind=Caption.Kind.INSTRUCTION_CONDITIONED, text=t,
                source=Source.RESEARCHER)
        for p, t in enumerate(captions)
    )
    candidate = ReferenceCandidate.objects.create(
        instance=instance, text=reference, model_name="gpt-4", source=Source.RESEARCHER
    )
    Verification.objects.create(
        candidate=candidate, outcome=Verification.Outcome.CORRECT, is_aggregate=True,
        source=Source.RESEARCHER,
    )
    AcceptedReference.objects.create(
        instance=instance, text=reference, origin=AcceptedReference.Origin.VERIFIED_CANDIDATE,
        candidate=candidate,
    )
    shape_count = sum(len(s) for s in scenes)
    ModelOutput.objects.bulk_create(
        ModelOutput(instance=instance, model_name=model, text=MODEL_ANSWERS[model].format(n=shape_count),
                    source=Source.RESEARCHER)
        for model in DEMO_MODELS
    )
    return instance
