"""Instruction generation: from a family's seed example, write a new instruction and supply an image."""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import Image, Instance, InstanceImage, InstructionFamily, Source
from datasets_app.services import ImageValidationError, inspect_image_bytes, store_image

from .base import TaskType, clean_text, image_view, require_dict


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
        }

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        instruction = clean_text(data, "instruction", label=_("The instruction"), max_length=2000)
        license_name = clean_text(data, "license", label=_("The license"), max_length=200)
        if license_name not in permissive_licenses():
            raise ValidationError(
                _("The license %(license)s is not accepted; choose one of: %(known)s")
                % {"license": license_name, "known": ", ".join(permissive_licenses())}
            )
        creator = clean_text(data, "creator", label=_("The creator"), max_length=300)
        source_url = _clean_url(
            clean_text(data, "source_url", label=_("The source URL"), max_length=1000), label=_("The source URL")
        )
        image_url = clean_text(data, "image_url", label=_("The image URL"), max_length=1000, required=False)
        upload = files.get("image_file") if files else None
        if bool(upload) == bool(image_url):
            raise ValidationError(_("Upload an image file or give an image URL (exactly one of them)."))
        payload = {
            "instruction": instruction,
            "license": license_name,
            "creator": creator,
            "source_url": source_url,
        }
        if image_url:
            payload["image_url"] = _clean_url(image_url, label=_("The image URL"))
            return payload
        if upload.size > settings.MAX_IMAGE_UPLOAD_BYTES:
            raise ValidationError(
                _("The image file is larger than %(mb)g MB.") % {"mb": settings.MAX_IMAGE_UPLOAD_BYTES / 2**20}
            )
        content = upload.read()
        try:
            fmt, width, height = inspect_image_bytes(content)
        except ImageValidationError as exc:
            raise ValidationError(_("The image was refused: %(reason)s.") % {"reason": exc}) from None
        payload.update(
            image_sha256=hashlib.sha256(content).hexdigest(),
            image_format=fmt,
            image_width=width,
            image_height=height,
            image_size_bytes=len(content),
        )
        payload["_image_content"] = content
        return payload

    def apply(self, assignment, *, uploads):
        payload = assignment.payload
        family = assignment.item.family
        if "image_url" in payload:
            image, _created = Image.objects.get_or_create(
                url=payload["image_url"],
                defaults={
                    "license": payload["license"],
                    "creator": payload["creator"],
                    "source_url": payload["source_url"],
                },
            )
            image_key = image.url
        else:
            image = store_image(
                content=uploads["_image_content"],
                license=payload["license"],
                creator=payload["creator"],
                source_url=payload["source_url"],
            )
            image_key = image.sha256
        content_key = Instance.compute_content_key(family.name, payload["instruction"], [image_key])
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
        InstanceImage.objects.create(instance=instance, image=image, position=0)
        assignment.result = {"instance_id": instance.pk, "image_id": image.pk}

