"""Instruction-conditioned captions: one caption per image, rich enough to follow the instruction."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import Caption, Instance, Source

from .base import TaskType, clean_text, instance_view, require_dict


class CaptionTask(TaskType):
    key = "caption"
    label = gettext_lazy("Instruction-conditioned caption")
    template_name = "annotation/tasks/caption.html"
    instructions = gettext_lazy(
        "Describe each image so that someone who only reads your text, without seeing the image, can "
        "follow the instruction. Mention every detail the instruction needs: objects, colours, counts, "
        "positions and any text in the image."
    )

    def make_item(self, *, round, target, position):
        from ..models import WorkItem

        if not isinstance(target, Instance):
            raise ValidationError("caption items are instances")
        return WorkItem(round=round, position=position, instance=target)

    def context(self, assignment):
        return {"instance": instance_view(assignment.item.instance)}

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        image_count = assignment.item.instance.image_links.count()
        if hasattr(data, "getlist"):
            captions = data.getlist("captions")
        else:
            captions = data.get("captions")
        if not isinstance(captions, list):
            raise ValidationError(_("Captions must be a list with one caption per image."))
        if len(captions) != image_count:
            raise ValidationError(
                _("Write one caption per image: %(expected)d expected, %(got)d given.")
                % {"expected": image_count, "got": len(captions)}
            )
        cleaned = []
        for number, text in enumerate(captions, start=1):
            cleaned.append(
                clean_text({"caption": text}, "caption", label=_("The caption of image %(n)d") % {"n": number})
            )
        return {"captions": cleaned}

    def apply(self, assignment, *, uploads):
        # Stored as not current: the item's aggregation picks which worker's captions feed the LLM.
        caption_ids = []
        for position, text in enumerate(assignment.payload["captions"]):
            caption = Caption(
                instance=assignment.item.instance,
                position=position,
                kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                text=text,
                source=Source.CROWD,
                author=assignment.worker.user,
                is_current=False,
            )
            caption.full_clean()
            caption.save()
            caption_ids.append(caption.pk)
        assignment.result = {"caption_ids": caption_ids}

    def aggregate(self, item):
        """The earliest approved-or-pending submission's captions become current; the instance moves on."""
        from ..models import Assignment

        chosen = (
            item.assignments.submitted()
            .exclude(review_status=Assignment.ReviewStatus.REJECTED)
            .order_by("submitted_at", "id")
            .first()
        )
        if chosen is None:
            return None
        instance = item.instance
        current = instance.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED, is_current=True)
        current.update(is_current=False)
        made_current = instance.captions.filter(pk__in=chosen.result["caption_ids"]).update(is_current=True)
        if instance.status == Instance.Status.AWAITING_CAPTION:
            instance.status = Instance.Status.AWAITING_REFERENCE
            instance.save(update_fields=["status", "updated_at"])
        return {"chosen_assignment": chosen.pk, "captions": made_current, "at": timezone.now().isoformat()}
