"""Instruction generation: from a family's seed example, write a new instruction and supply its image or images."""
from __future__ import annotations

import hashlib
import io
import re

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from PIL import Image as PILImage
from PIL import ImageDraw

from datasets_app import instance_status
from datasets_app.models import Image, Instance, InstanceImage, InstructionFamily, Source
from datasets_app.image_urls import validate_submitted_image_url
from datasets_app.licenses import lookup as lookup_license
from datasets_app.licenses import publishable_ids
from datasets_app.services import ImageValidationError, clean_image_bytes, inspect_image_bytes, store_image

from .base import TaskType, TextField, clean_text, image_view
from .sources import ItemSource, ItemSpec, SourceResult, ids_field, only_known_ids


# Images of a multi-image family: at least two (a before/after pair, a set to compare), at most this many.
MIN_MULTI_IMAGES = 2
MAX_IMAGES = 10

# Indexed image fields of a submission, Django formset style: images-0-url, images-0-license,
# images-0-creator, images-0-source_url, and the upload images-0-file; the index gives the order.
_INDEXED_FIELD = re.compile(r"^images-(\d{1,4})-(url|file|license|creator|source_url)$")


def permissive_licenses() -> list[str]:
    """The licenses a worker may choose for an image they supply: those a release may publish
    (VisIT-Bench asks for permissively licensed images)."""
    return publishable_ids()


def _clean_url(value: str, *, label: str) -> str:
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        raise ValidationError(_("%(field)s is not a valid http(s) URL.") % {"field": label}) from None
    return value


class ImageRowsWidget(forms.Widget):
    """Hands the whole submission to ImageRowsField: the rows are spread over many indexed keys."""

    def value_from_datadict(self, data, files, name):
        return {"data": data, "files": files or {}}


class ImageRowsField(forms.Field):
    widget = ImageRowsWidget

    def __init__(self, *, limits: tuple[int, int] = (1, 1), **kwargs):
        self.limits = limits
        super().__init__(required=False, **kwargs)

    def clean(self, value):
        """[(stored entry, bytes or None)] in order; every problem names its image when there are several."""
        rows, indexed = _image_rows(value["data"], value["files"])
        fewest, most = self.limits
        if len(rows) < fewest:
            if fewest == 1:
                raise ValidationError(_("Upload an image file or give an image URL (exactly one of them)."))
            raise ValidationError(
                _("This family needs at least %(min)d images; the submission has %(count)d.")
                % {"min": fewest, "count": len(rows)}
            )
        if len(rows) > most:
            if most == 1:
                raise ValidationError(
                    _("This family takes exactly one image; the submission has %(count)d.") % {"count": len(rows)}
                )
            raise ValidationError(
                _("At most %(max)d images can be given; the submission has %(count)d.")
                % {"max": most, "count": len(rows)}
            )
        images, problems = [], []
        for number, row in enumerate(rows, start=1):
            try:
                images.append(_validate_image(row))
            except ValidationError as error:
                if not indexed:
                    raise
                problems.append(
                    _("Image %(number)d: %(problem)s") % {"number": number, "problem": " ".join(error.messages)}
                )
        if problems:
            raise ValidationError(problems)
        return images


class InstructionGenerationForm(forms.Form):
    instruction = TextField(
        max_length=2000,
        error_messages={"required": gettext_lazy("The instruction is empty.")},
    )
    images = ImageRowsField()

    def __init__(self, *args, image_limits: tuple[int, int], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["images"].limits = image_limits


class FamiliesParams(forms.Form):
    family_ids = ids_field("Families", "Ids of the project's families; empty for all of them.",
                           browse="families")
    per_family = forms.IntegerField(min_value=1, max_value=1000, required=False, initial=1,
                                    label="Items per family", help_text="Each item asks one worker for one new instruction.")


class FamiliesSource(ItemSource):
    key = "families"
    label = "Instruction families"
    description = "n items per family: each asks for a new instruction of the family with its image(s)."
    params_form = FamiliesParams

    def plan(self, *, project, params, language, rng):
        families = only_known_ids(InstructionFamily.objects.filter(project=project).order_by("name", "pk"),
                                  params.get("family_ids") or [], what="family")
        per_family = params.get("per_family") or 1
        specs = [ItemSpec(target=family, label=f"{family.name} ({number} of {per_family})")
                 for family in families for number in range(1, per_family + 1)]
        return SourceResult(specs=specs)

class InstructionGeneration(TaskType):
    key = "instruction_generation"
    label = gettext_lazy("Instruction generation")
    template_name = "annotation/tasks/instruction_generation.html"
    review_template_name = "annotation/review/instruction_generation.html"
    script_name = "annotation/tasks/instruction_generation.js"
    form_class = InstructionGenerationForm
    target_model = InstructionFamily
    target_fields = ("family",)
    follow_up_type = "caption"
    item_sources = (FamiliesSource(),)
    instructions = gettext_lazy(
        "Study the example of this instruction family. Then write a new instruction of the same kind "
        "and supply an image for it, either by uploading a file or by giving its web address. Use "
        "only permissively licensed images (for example from Openverse) and say who made the image "
        "and where you found it."
    )

    coverage_lookup = "family__name"

    records_typing = True

    def written_texts(self, assignment):
        instruction = (assignment.payload or {}).get("instruction")
        return [instruction] if instruction else []

    def context(self, assignment):
        family = assignment.item.family
        return {
            "family": {
                "name": family.name,
                "description": family.description,
                "is_multi_image": family.is_multi_image,
                "seed_instruction": family.seed_instruction,
                "seed_response": family.seed_response,
                "seed_images": [image_view(image) for image in family.ordered_seed_images()],
            },
            "licenses": permissive_licenses(),
            "min_images": self.image_limits(family)[0],
            "max_images": self.image_limits(family)[1],
        }

    def review_context(self, assignment):
        """The family's example the worker saw, and the instruction and images they supplied (stored
        images as stored; each with the license, creator and source they gave)."""
        payload = assignment.payload
        stored = {}
        image_ids = (assignment.result or {}).get("image_ids") or []
        if image_ids:
            stored = {image.pk: image for image in Image.objects.filter(pk__in=image_ids)}
        images = []
        for index, entry in enumerate(payload["images"]):
            image = stored.get(image_ids[index]) if index < len(image_ids) else None
            images.append({
                "url": image.display_url if image is not None else entry.get("image_url", ""),
                "license": entry["license"], "creator": entry["creator"], "source_url": entry["source_url"],
            })
        return {"task": self.context(assignment), "instruction": payload["instruction"], "images": images}

    def image_limits(self, family) -> tuple[int, int]:
        """(fewest, most) images a submission for ``family`` must have."""
        return (MIN_MULTI_IMAGES, MAX_IMAGES) if family.is_multi_image else (1, 1)

    def form_kwargs(self, assignment):
        return {"image_limits": self.image_limits(assignment.item.family)}

    def payload(self, assignment, cleaned):
        payload = {"instruction": cleaned["instruction"], "images": [entry for entry, _content in cleaned["images"]]}
        for index, (_entry, content) in enumerate(cleaned["images"]):
            if content is not None:
                payload[f"_image_content_{index}"] = content
        return payload

    def on_completed(self, item):
        """With a caption follow-up round: the instances this item's submissions created become its items."""
        from .. import pipeline

        follow_up = pipeline.usable_follow_up(item)
        if follow_up is not None:
            pipeline.caption_new_instances(item=item, caption_round=follow_up)

    def simulate(self, *, assignment, rng, accuracy):
        """A new instruction with small generated PNG uploads (one per image the family needs)."""
        family = assignment.item.family
        fewest, _most = self.image_limits(family)
        answers = {"instruction": f"Simulated {family.name} instruction {rng.randrange(10**9)}: what is shown?"}
        for index in range(fewest):
            answers.update({
                f"images-{index}-license": permissive_licenses()[0],
                f"images-{index}-creator": "crowdbench dry run",
                f"images-{index}-source_url": "https://example.org/dry-run",
                f"images-{index}-file": _simulated_png(rng, name=f"dry-run-{index}.png"),
            })
        return answers

    def apply(self, assignment, *, uploads):
        payload = assignment.payload
        family = assignment.item.family
        images = []
        image_keys = []
        for index, entry in enumerate(payload["images"]):
            if "image_url" in entry:
                image, _created = Image.objects.get_or_create(
                    project_id=family.project_id,
                    url=entry["image_url"],
                    defaults={
                        "license": entry["license"],
                        "creator": entry["creator"],
                        "source_url": entry["source_url"],
                    },
                )
                image_keys.append(image.url)
            else:
                image = store_image(
                    project=family.project,
                    content=uploads[f"_image_content_{index}"],
                    license=entry["license"],
                    creator=entry["creator"],
                    source_url=entry["source_url"],
                )
                image_keys.append(image.sha256)
            images.append(image)
        content_key = Instance.compute_content_key(family.name, payload["instruction"], image_keys)
        if Instance.objects.filter(family=family, content_key=content_key).exists():
            raise ValidationError(_("This instruction with this image already exists in the benchmark."))
        try:
            with transaction.atomic():
                instance = instance_status.create_instance(
                    family=family,
                    instruction=payload["instruction"],
                    source=Source.CROWD,
                    status=Instance.Status.AWAITING_CAPTION,
                    content_key=content_key,
                    created_by=assignment.worker.user,
                    clean=True,
                )
        except IntegrityError:
            raise ValidationError(
                _("This instruction with this image already exists in the benchmark.")
            ) from None
        InstanceImage.objects.bulk_create(
            InstanceImage(instance=instance, image=image, position=position) for position, image in enumerate(images)
        )
        assignment.result = {"instance_id": instance.pk, "image_ids": [image.pk for image in images]}


def _simulated_png(rng, *, name: str) -> SimpleUploadedFile:
    """A small PNG of random colour blocks, different on every call, so content keys never collide."""
    picture = PILImage.new("RGB", (64, 48), tuple(rng.randrange(256) for _channel in range(3)))
    draw = ImageDraw.Draw(picture)
    for _block in range(4):
        x, y = rng.randrange(56), rng.randrange(40)
        draw.rectangle([x, y, x + 8, y + 8], fill=tuple(rng.randrange(256) for _channel in range(3)))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="image/png")


def _image_rows(data, files) -> tuple[list[dict], bool]:
    """The submitted images in order, each {"url", "file", "license", "creator", "source_url"}.

    Either the indexed fields (images-<n>-…, any number of images, ordered by n) or the flat
    single-image fields (image_url or the upload image_file, with license, creator, source_url).
    The second value tells which form was used.
    """
    rows: dict[int, dict] = {}
    for key in data.keys():
        match = _INDEXED_FIELD.match(str(key))
        if match and match.group(2) != "file":
            rows.setdefault(int(match.group(1)), {})[match.group(2)] = data.get(key)
    for key in files.keys():
        match = _INDEXED_FIELD.match(str(key))
        if match and match.group(2) == "file":
            rows.setdefault(int(match.group(1)), {})["file"] = files.get(key)
    flat_given = bool(data.get("image_url")) or bool(files.get("image_file"))
    if rows:
        if flat_given:
            raise ValidationError(
                _("Give the images either as numbered image fields or as the single image fields, not both.")
            )
        return [rows[index] for index in sorted(rows)], True
    if not flat_given:
        return [], False
    row = {name: data.get(name, "") for name in ("license", "creator", "source_url")}
    row.update(url=data.get("image_url", ""), file=files.get("image_file"))
    return [row], False


def _validate_image(row: dict) -> tuple[dict, bytes | None]:
    """One image's stored entry (license, creator, source URL, and URL or file facts) and its bytes."""
    given = clean_text(row, "license", label=_("The license"), max_length=200)
    license_name = lookup_license(given)  # the identifier, whichever usual spelling was sent
    if license_name not in permissive_licenses():
        raise ValidationError(
            _("The license %(license)s is not accepted; choose one of: %(known)s")
            % {"license": given, "known": ", ".join(permissive_licenses())}
        )
    creator = clean_text(row, "creator", label=_("The creator"), max_length=300)
    source_url = _clean_url(
        clean_text(row, "source_url", label=_("The source URL"), max_length=1000), label=_("The source URL")
    )
    image_url = clean_text(row, "url", label=_("The image URL"), max_length=1000, required=False)
    upload = row.get("file")
    if bool(upload) == bool(image_url):
        raise ValidationError(_("Upload an image file or give an image URL (exactly one of them)."))
    entry = {"license": license_name, "creator": creator, "source_url": source_url}
    if image_url:
        entry["image_url"] = validate_submitted_image_url(image_url, label=_("The image URL"))
        return entry, None
    if upload.size > settings.MAX_IMAGE_UPLOAD_BYTES:
        raise ValidationError(
            _("The image file is larger than %(mb)g MB.") % {"mb": settings.MAX_IMAGE_UPLOAD_BYTES / 2**20}
        )
    try:
        content = clean_image_bytes(upload.read()).content  # stored as cleaned: no EXIF, GPS, ICC
        fmt, width, height = inspect_image_bytes(content)
    except ImageValidationError as exc:
        raise ValidationError(_("The image was refused: %(reason)s.") % {"reason": exc}) from None
    entry.update(
        image_sha256=hashlib.sha256(content).hexdigest(),
        image_format=fmt,
        image_width=width,
        image_height=height,
        image_size_bytes=len(content),
    )
    return entry, content
