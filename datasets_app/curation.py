"""A researcher's corrections to the project's data: edit or delete a family, an instance, an image, a
review set or a model output while nothing has used it yet.

Data is *used* once a row of another app points at it (a round's work item, a judged battle, a model
score: anything a delete would have to protect or take along outside this app) or once the crowd has
given a verdict on it; an image is used when a family, instance or review set showing it is. A used
row is never edited or deleted (``DataInUse``, 409, the reason named); a delete also waits for the
rows that show it (an image shown by an instance). Edits are checked as the imports check the same
fields (``djangokit.text_input.clean_text``, the license vocabulary, names unique per project); a
refusal names the field and writes nothing.

This app cannot import the apps above it: what uses a row is found from Django's own relations
(``Collector``), by app label, never by model name; a use that no relation draws (a judged battle
names an output by its instance and model name) is told by the app that knows it, through a check
it registers at start-up (``register_use_check``, e.g. in ``EvaluationConfig.ready``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import router, transaction
from django.db.models import PROTECT, RESTRICT, Model, ProtectedError, RestrictedError
from django.db.models.deletion import Collector

from djangokit.text_input import clean_text
from kernel.errors import ServiceError

from .licenses import UnknownLicense, normalise_license
from .models import (
    AcceptedReference,
    FamilySeedImage,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ModelOutput,
    ReviewSet,
    Verification,
)

APP_LABEL = "datasets_app"
# Rows of this app that mean the crowd (or an import of its work) has already judged the data.
VERDICT_MODELS = (Verification, AcceptedReference)
# Rows of this app that only show an image: an image is used when what they belong to is.
IMAGE_HOLDERS = {InstanceImage: "instance", FamilySeedImage: "family"}
# Bounds of the edited texts: the same as the imports'.
LIMITS = {"name": 200, "description": 5000, "seed_instruction": 5000, "seed_response": 20000,
          "instruction": 5000, "text": 20000, "creator": 300, "category": 200, "license": 200,
          "source_url": 1000}


# (row) -> why the row is used, in words ("2 judged battles compared it"); empty when it is not.
USE_CHECKS: list[Callable[[Model], list[str]]] = []


def register_use_check(check: Callable[[Model], list[str]]) -> None:
    """An app above tells when it uses this app's rows in a way no foreign key shows."""
    if check not in USE_CHECKS:
        USE_CHECKS.append(check)


class DataInUse(ServiceError):
    """The row is already used; nothing was changed."""

    status_code = 409


class InvalidEdit(ServiceError):
    """An edited value was refused; nothing was changed."""

    status_code = 400

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


def _plural(model, count: int) -> str:
    name = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
    return f"{count} {name}"


def _counted(rows) -> Counter:
    return Counter(type(row) for row in rows)


def _direct_blocking(row: Model) -> Counter:
    """Rows that protect ``row`` directly, counted in the database (a family's 10,000 instances are
    counted, not loaded)."""
    blocking: Counter = Counter()
    for relation in row._meta.related_objects:
        if relation.many_to_many or relation.on_delete not in (PROTECT, RESTRICT):
            continue
        count = relation.related_model._base_manager.filter(**{relation.field.name: row}).count()
        if count:
            blocking[relation.related_model] += count
    return blocking


def _collect(row: Model) -> tuple[Collector | None, Counter]:
    """What deleting ``row`` would take along (the collector; None when rows protect it directly, so
    nothing can be taken), and the rows that forbid it, by model."""
    blocking = _direct_blocking(row)
    if blocking:
        return None, blocking
    collector = Collector(using=router.db_for_write(type(row)))
    try:
        collector.collect([row])
    except ProtectedError as error:
        blocking.update(_counted(error.protected_objects))
    except RestrictedError as error:
        blocking.update(_counted(error.restricted_objects))
    return collector, blocking


def usage(row: Model) -> list[str]:
    """Why ``row`` counts as used (empty: it may be edited or deleted), e.g. ["2 work items refer to it"]."""
    collector, blocking = _collect(row)
    taken: Counter = Counter()
    if collector is not None:
        taken.update({model: len(rows) for model, rows in collector.data.items()})
        for query in collector.fast_deletes:
            count = query.count()
            if count:
                taken[query.model] += count
    reasons = []
    for model, count in sorted((blocking + taken).items(), key=lambda pair: pair[0]._meta.label):
        if model._meta.app_label != APP_LABEL:
            reasons.append(f"{_plural(model, count)} {'refers' if count == 1 else 'refer'} to it")
        elif model in VERDICT_MODELS:
            reasons.append(f"it has {_plural(model, count)}")
        elif model in blocking and not isinstance(row, Image):
            reasons.append(f"{_plural(model, count)} {'depends' if count == 1 else 'depend'} on it")
    for check in USE_CHECKS:
        reasons += check(row)
    if isinstance(row, Image):
        reasons += _image_usage(row)
    return reasons


def _image_usage(image: Image) -> list[str]:
    """An image is used when a family, instance or review set showing it is."""
    holders = [getattr(link, field) for model, field in IMAGE_HOLDERS.items()
               for link in model.objects.filter(image=image).select_related(field)]
    holders += list(ReviewSet.objects.filter(image=image))
    used = [holder for holder in holders if usage(holder)]
    return [f"{_plural(type(used[0]), len(used))} showing it {'is' if len(used) == 1 else 'are'} used"] if used else []


def _shown_by(blocking: Counter) -> list[str]:
    """Rows of this app that still show an image (its instances, seed examples, review sets)."""
    return [_plural(model, count) for model, count in sorted(blocking.items(), key=lambda pair: pair[0]._meta.label)
            if model._meta.app_label == APP_LABEL]


def check_unused(row: Model, *, action: str) -> None:
    reasons = usage(row)
    if reasons:
        raise DataInUse(f"This {row._meta.verbose_name} cannot be {action}: it is already used "
                        f"({'; '.join(reasons)}). Nothing was changed.")


def _clean(field: str, value, *, label: str, required: bool = True) -> str:
    try:
        return clean_text(value, label=label, max_length=LIMITS[field], required=required)
    except ValidationError as error:
        raise InvalidEdit(" ".join(error.messages), field=field) from None


def _url(field: str, value, *, label: str) -> str:
    value = _clean(field, value, label=label, required=False) if value else ""
    if value:
        try:
            URLValidator(schemes=["http", "https"])(value)
        except ValidationError:
            raise InvalidEdit(f"{label} is not an http(s) address.", field=field) from None
    return value


# --- edits ---------------------------------------------------------------------------------------


@transaction.atomic
def edit_family(family: InstructionFamily, *, name, description, seed_instruction, seed_response) -> InstructionFamily:
    family = InstructionFamily.objects.select_for_update().get(pk=family.pk)
    check_unused(family, action="edited")
    name = _clean("name", name, label="Name")
    if InstructionFamily.objects.filter(project=family.project_id, name=name).exclude(pk=family.pk).exists():
        raise InvalidEdit(f"A family named {name!r} already exists in this project.", field="name")
    family.name = name
    family.description = _clean("description", description, label="Description", required=False)
    family.seed_instruction = _clean("seed_instruction", seed_instruction, label="Seed instruction")
    family.seed_response = _clean("seed_response", seed_response, label="Seed response")
    family.full_clean()
    family.save()
    return family


def _image_key(image: Image) -> str:
    return image.url or image.sha256 or str(image.pk)


@transaction.atomic
def edit_instance(instance: Instance, *, instruction) -> Instance:
    instance = Instance.objects.select_for_update().select_related("family").get(pk=instance.pk)
    check_unused(instance, action="edited")
    instance.instruction = _clean("instruction", instruction, label="Instruction")
    # The instance's identity follows its content, as the imports compute it.
    instance.content_key = Instance.compute_content_key(
        instance.family.name, instance.instruction, [_image_key(image) for image in instance.ordered_images()])
    if Instance.objects.filter(family=instance.family_id, content_key=instance.content_key).exclude(
            pk=instance.pk).exists():
        raise InvalidEdit("The family already has this instruction over the same images.", field="instruction")
    instance.save(update_fields=["instruction", "content_key", "updated_at"])
    return instance


@transaction.atomic
def edit_image(image: Image, *, license, creator, source_url, category) -> Image:
    image = Image.objects.select_for_update().get(pk=image.pk)
    check_unused(image, action="edited")
    try:
        image.license = normalise_license(_clean("license", license, label="License", required=False)
                                          if license else "")
    except UnknownLicense as error:
        raise InvalidEdit(error.message, field="license") from None
    image.creator = _clean("creator", creator, label="Creator", required=False)
    image.source_url = _url("source_url", source_url, label="Source URL")
    image.category = _clean("category", category, label="Category", required=False)
    image.save(update_fields=["license", "creator", "source_url", "category"])
    return image


@transaction.atomic
def edit_review_set(review_set: ReviewSet, *, category) -> ReviewSet:
    review_set = ReviewSet.objects.select_for_update().get(pk=review_set.pk)
    check_unused(review_set, action="edited")
    review_set.category = _clean("category", category, label="Category", required=False)
    review_set.save(update_fields=["category"])
    return review_set


@transaction.atomic
def edit_model_output(output: ModelOutput, *, text) -> ModelOutput:
    output = ModelOutput.objects.select_for_update().get(pk=output.pk)
    check_unused(output, action="edited")
    output.text = _clean("text", text, label="Text")
    output.save(update_fields=["text"])
    return output


# --- deletes -------------------------------------------------------------------------------------


@transaction.atomic
def delete_row(row: Model) -> None:
    """Delete an unused family, instance, image, review set or model output (with what is its own:
    an instance's captions and outputs, a review set's reviews); refused while anything uses or shows it."""
    row = type(row).objects.select_for_update().get(pk=row.pk)
    check_unused(row, action="deleted")
    _, blocking = _collect(row)
    needed = _shown_by(blocking)
    if needed:
        raise DataInUse(f"This {row._meta.verbose_name} cannot be deleted while {', '.join(needed)} "
                        f"{'needs' if sum(blocking.values()) == 1 else 'need'} it; delete those first. "
                        "Nothing was changed.")
    row.delete()
