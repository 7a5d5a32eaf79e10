"""What every task type declares; the engine and the pages only talk to this interface."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from crowdbench.text_input import clean_text as clean_input_text

if TYPE_CHECKING:
    from ..models import Assignment, CollectionRound, WorkItem


class TaskType:
    key: ClassVar[str]
    label: ClassVar[str]
    template_name: ClassVar[str]
    # Short worker-facing instructions, marked for translation in each module.
    instructions: ClassVar[str]

    def make_item(self, *, round: CollectionRound, target: Any, position: int) -> WorkItem:
        """An unsaved WorkItem of ``round`` pointing at ``target``."""
        raise NotImplementedError

    def present(self, *, item: WorkItem, rng: random.Random) -> dict:
        """What is randomised per assignment (side order, review order); recorded on the assignment."""
        return {}

    def context(self, assignment: Assignment) -> dict:
        """Plain data (texts, image URLs) for the page and the API; never pre-escaped HTML."""
        raise NotImplementedError

    def validate(self, *, assignment: Assignment, data: Any, files: Any) -> dict:
        """The JSON payload to store, with uploads under keys starting with "_" (not stored).

        Raises ValidationError with a worker-readable message.
        """
        raise NotImplementedError

    def result(self, assignment: Assignment) -> dict:
        """The stored payload in item terms (e.g. winner "a"/"b"); gold items are checked on this."""
        return {}

    def apply(self, assignment: Assignment, *, uploads: dict) -> None:
        """Effects on the benchmark data of an accepted submission."""

    def aggregate(self, item: WorkItem) -> dict | None:
        """Called once when the item has all its judgments; returns the stored aggregate."""
        return None


def require_dict(data: Any) -> Any:
    if not hasattr(data, "get"):
        raise ValidationError(_("The submission must be a JSON object or a form."))
    return data


def clean_text(data: Any, name: str, *, label: str, max_length: int = 5000, required: bool = True) -> str:
    """A stripped text field; ``label`` is the already translated field name for messages."""
    return clean_input_text(data.get(name, ""), label=label, max_length=max_length, required=required)


def image_view(image) -> dict:
    return {"url": image.display_url, "license": image.license, "creator": image.creator,
            "source_url": image.source_url}


def instance_view(instance) -> dict:
    """The instance as pages show it: instruction, family and ordered images."""
    return {
        "id": instance.pk,
        "instruction": instance.instruction,
        "family": instance.family.name,
        "images": [image_view(image) for image in instance.ordered_images()],
    }


def current_captions(instance) -> list[str]:
    from datasets_app.models import Caption

    return list(
        instance.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED, is_current=True)
        .order_by("position")
        .values_list("text", flat=True)
    )
