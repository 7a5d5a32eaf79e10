"""Instruction generation: from a family's seed example, write a new instruction and supply its image or images."""
from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import Image, Instance, InstanceImage, InstructionFamily, Source
from datasets_app.image_urls import validate_submitted_image_url
from datasets_app.services import ImageValidationError, clean_image_bytes, inspect_image_bytes, store_image

from .base import TaskType, clean_text, image_view, require_dict


# Images of a multi-image family: at least two (a before/after pair, a set to compare), at most this many.
MIN_MULTI_IMAGES = 2
MAX_IMAGES = 10

# Indexed image fields of a submission, Django formset style: images-0-url, images-0-license,
# images-0-creator, images-0-source_url, and the upload images-0-file; the index gives the order.
_INDEXED_FIELD = re.compile(r"^images-(\d{1,4})-(url|file|license|creator|source_url)$")


def permissive_licenses() -> list[str]:
    return list(settings.ANNOTATION_PERMISSIVE_LICENSES)


def _clean_url(value: str, *, label: str) -> str:
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        raise ValidationError(_("%(field)s is not a valid http(s) URL.") % {"field": label}) from None
    return value


class InstructionGeneration(TaskType):
    key = "instruction_generation"
    label = gettext_lazy("Instruction generation")
    template_name = "annotation/tasks/instruction_generation.html"
    instructions = gettext_lazy(
        "Study the example of this instruction family. Then write a new instruction of the same kind "
        "and supply an image for it, either by uploading a file or by giving its web address. Use "
        "only permissively licensed images (for example from Openverse) and say who made the image "
        "and where you found it."
    )

    def make_item(self, *, round, target, position):
        from ..models import WorkItem

        if not isinstance(target, InstructionFamily):
            raise ValidationError("instruction generation items are instruction families")
        return WorkItem(round=round, position=position, family=target)

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

    def image_limits(self, family) -> tuple[int, int]:
        """(fewest, most) images a submission for ``family`` must have."""
        return (MIN_MULTI_IMAGES, MAX_IMAGES) if family.is_multi_image else (1, 1)

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        files = files or {}
        instruction = clean_text(data, "instruction", label=_("The instruction"), max_length=2000)
        rows, indexed = _image_rows(data, files)
        fewest, most = self.image_limits(assignment.item.family)
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
        images = []
        payload = {"instruction": instruction, "images": images}
        for number, row in enumerate(rows, start=1):
            try:
                image, content = _validate_image(row)
            except ValidationError as error:
                if not indexed:
                    raise
                raise ValidationError(
                    _("Image %(number)d: %(problem)s") % {"number": number, "problem": " ".join(error.messages)}
                ) from None
            images.append(image)
            if content is not None:
                payload[f"_image_content_{number - 1}"] = content
        return payload

    def apply(self, assignment, *, uploads):
        payload = assignment.payload
        family = assignment.item.family
        images = []
        image_keys = []
        for index, entry in enumerate(payload["images"]):
            if "image_url" in entry:
                image, _created = Image.objects.get_or_create(
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
                    content=uploads[f"_image_content_{index}"],
                    license=entry["license"],
                    creator=entry["creator"],
                    source_url=entry["source_url"],
                )
                image_keys.append(image.sha256)
            images.append(image)
        content_key = Instance.compute_content_key(family.name, payload["instruction"], image_keys)
        if Instance.objects.filter(content_key=content_key).exists():
            raise ValidationError(_("This instruction with this image already exists in the benchmark."))
        instance = Instance(
            family=family,
            instruction=payload["instruction"],
            source=Source.CROWD,
            status=Instance.Status.AWAITING_CAPTION,
            content_key=content_key,
            created_by=assignment.worker.user,
        )
        instance.full_clean()
        try:
            with transaction.atomic():
                instance.save()
        except IntegrityError:
            raise ValidationError(
                _("This instruction with this image already exists in the benchmark.")
            ) from None
        InstanceImage.objects.bulk_create(
            InstanceImage(instance=instance, image=image, position=position) for position, image in enumerate(images)
        )
        assignment.result = {"instance_id": instance.pk, "image_ids": [image.pk for image in images]}


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
    license_name = clean_text(row, "license", label=_("The license"), max_length=200)
    if license_name not in permissive_licenses():
        raise ValidationError(
            _("The license %(license)s is not accepted; choose one of: %(known)s")
            % {"license": license_name, "known": ", ".join(permissive_licenses())}
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
