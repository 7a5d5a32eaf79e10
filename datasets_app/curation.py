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
from dataclasses import dataclass

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
# What shows an image, named as the pages name it (singular, plural), in the order they are told.
HOLDER_NAMES = {Instance: ("instance", "instances"), InstructionFamily: ("family", "families"),
                ReviewSet: ("review set", "review sets")}
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


@dataclass(frozen=True)
class Holders:
    """One kind of row showing an image (instances, families by their seed example, review sets):
    how many of them show it, and how many of those are used."""

    model: type[Model]
    shown: int
    used: int


def image_holders(image: Image) -> list[Holders]:
    """What shows ``image``, kind by kind (the kinds with at least one row), each row counted once
    (an instance showing it twice is one instance)."""
    rows: dict[type[Model], dict[int, Model]] = {model: {} for model in HOLDER_NAMES}
    for model, field in IMAGE_HOLDERS.items():
        for link in model.objects.filter(image=image).select_related(field):
            holder = getattr(link, field)
            rows[type(holder)][holder.pk] = holder
    for review_set in ReviewSet.objects.filter(image=image):
        rows[ReviewSet][review_set.pk] = review_set
    return [Holders(model, len(held), sum(1 for holder in held.values() if _own_usage(holder)))
            for model, held in rows.items() if held]


def holders_phrase(counts: list[tuple[type[Model], int]]) -> str:
    """ "2 instances, 1 family and 2 review sets" (kinds counted zero are left out)."""
    parts = [f"{count} {HOLDER_NAMES[model][count != 1]}" for model, count in counts if count]
    return "".join(parts) if len(parts) < 2 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _used_holders(holders: list[Holders], *, already: bool = False) -> str:
    """ "2 instances and 1 family that show it are used"; empty when none of them is used."""
    used = [(entry.model, entry.used) for entry in holders if entry.used]
    if not used:
        return ""
    one = sum(count for _, count in used) == 1
    return (f"{holders_phrase(used)} that {'shows' if one else 'show'} it {'is' if one else 'are'} "
            f"{'already ' if already else ''}used")


def usage(row: Model, *, holders: list[Holders] | None = None) -> list[str]:
    """Why ``row`` counts as used (empty: it may be edited or deleted), e.g. ["2 work items refer to it"];
    an image also when rows showing it are used (``holders``: its ``image_holders`` when already read)."""
    reasons = _own_usage(row)
    if isinstance(row, Image):
        shown = _used_holders(image_holders(row) if holders is None else holders)
        reasons += [shown] if shown else []
    return reasons


def _own_usage(row: Model) -> list[str]:
    """Why ``row`` itself is used (for an image: not counting what shows it)."""
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
    return reasons


def _shown_by(blocking: Counter) -> list[str]:
    """Rows of this app that protect ``row`` from a delete (what shows an image: ``image_holders``)."""
    return [_plural(model, count) for model, count in sorted(blocking.items(), key=lambda pair: pair[0]._meta.label)
            if model._meta.app_label == APP_LABEL]


def check_unused(row: Model, *, action: str, holders: list[Holders] | None = None) -> None:
    """Refuse (``DataInUse``) to edit or delete a used row, saying why: "This image cannot be deleted:
    3 instances that show it are already used." (``holders``: an image's ``image_holders`` when read)."""
    reasons = _own_usage(row)
    parts = [f"it is already used ({'; '.join(reasons)})"] if reasons else []
    if isinstance(row, Image):
        shown = _used_holders(image_holders(row) if holders is None else holders, already=True)
        parts += [shown] if shown else []
    if parts:
        raise DataInUse(f"This {row._meta.verbose_name} cannot be {action}: {' and '.join(parts)}. "
                        "Nothing was changed.")


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
    holders = image_holders(row) if isinstance(row, Image) else None
    check_unused(row, action="deleted", holders=holders)
    if holders:
        shown = holders_phrase([(entry.model, entry.shown) for entry in holders])
        one = sum(entry.shown for entry in holders) == 1
        raise DataInUse(f"This image cannot be deleted while {shown} {'shows' if one else 'show'} it; "
                        "delete those first. Nothing was changed.")
    _, blocking = _collect(row)
    needed = _shown_by(blocking)
    if needed:
        raise DataInUse(f"This {row._meta.verbose_name} cannot be deleted while {', '.join(needed)} "
                        f"{'needs' if sum(blocking.values()) == 1 else 'need'} it; delete those first. "
                        "Nothing was changed.")
    row.delete()
