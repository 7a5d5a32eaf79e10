"""Instruction-conditioned captions: one caption per image, rich enough to follow the instruction."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app import instance_status
from datasets_app.models import Caption, Instance, Source

from .base import ListField, TaskType, TextField, instance_view
from .sources import ItemSource, ItemSpec, SourceResult, ids_field, limit_field, limited, only_known_ids, queued_targets


class CaptionForm(forms.Form):
    captions = ListField(
        base_field=TextField(max_length=5000),
        item_label=gettext_lazy("The caption of image %(n)d"),
        error_messages={
            "required": gettext_lazy("Captions must be a list with one caption per image."),
            "invalid_list": gettext_lazy("Captions must be a list with one caption per image."),
        },
    )

    def __init__(self, *args, image_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.image_count = image_count

    def clean_captions(self):
        captions = self.cleaned_data["captions"]
        if len(captions) != self.image_count:
            raise ValidationError(
                _("Write one caption per image: %(expected)d expected, %(got)d given.")
                % {"expected": self.image_count, "got": len(captions)}
            )
        return captions


class AwaitingCaptionParams(forms.Form):
    instance_ids = ids_field("Instances", "Ids of the project's instances awaiting a caption; empty for all.",
                             browse="instances")
    limit = limit_field()


class AwaitingCaptionSource(ItemSource):
    key = "awaiting_caption"
    label = "Instances awaiting a caption"
    description = ("Instances of the project awaiting a caption, not already waiting in an item of a caption round "
                   "that is not closed or cancelled.")
    params_form = AwaitingCaptionParams
    stage = Instance.Status.AWAITING_CAPTION
    stage_action = "open a caption round"

    def plan(self, *, project, params, language, rng):
        instances = only_known_ids(
            Instance.objects.filter(family__project=project, status=Instance.Status.AWAITING_CAPTION),
            params.get("instance_ids") or [], what="instance awaiting a caption")
        instances = instances.filter(image_links__isnull=False).distinct().select_related("family").order_by("pk")
        queued = queued_targets(targets=instances, task_type=CaptionTask.key, column="instance")
        specs = [ItemSpec(target=instance, label=f"#{instance.pk} {instance.family.name}: {instance.instruction[:80]}",
                          instance_id=instance.pk)
                 for instance in instances if instance.pk not in queued]
        return SourceResult(specs=limited(specs, params.get("limit")),
                            notes={"already_queued": len(queued & {instance.pk for instance in instances})})

class CaptionTask(TaskType):
    key = "caption"
    label = gettext_lazy("Instruction-conditioned caption")
    template_name = "annotation/tasks/caption.html"
    review_template_name = "annotation/review/caption.html"
    form_class = CaptionForm
    target_model = Instance
    target_fields = ("instance",)
    follow_up_type = "verification"
    item_sources = (AwaitingCaptionSource(),)
    instructions = gettext_lazy(
        "Describe each image so that someone who only reads your text, without seeing the image, can "
        "follow the instruction. Mention every detail the instruction needs: objects, colours, counts, "
        "positions and any text in the image."
    )

    coverage_lookup = "instance__family__name"

    records_typing = True

    def written_texts(self, assignment):
        return list((assignment.payload or {}).get("captions") or [])

    def machine_texts(self, item):
        """The LLM's reference candidates and the model outputs for the instance."""
        from datasets_app.models import ModelOutput, ReferenceCandidate

        candidates = ReferenceCandidate.objects.filter(instance_id=item.instance_id, source=Source.LLM)
        outputs = ModelOutput.objects.filter(instance_id=item.instance_id)
        return ([(f"reference candidate {c.pk}", c.text) for c in candidates]
                + [(f"output of {o.model_name}", o.text) for o in outputs])

    def check_targets(self, item):
        super().check_targets(item)
        if not item.instance.image_links.exists():
            raise ValidationError({"instance": _("Instance %(id)s has no image to caption.") % {"id": item.instance_id}})

    def context(self, assignment):
        return {"instance": instance_view(assignment.item.instance)}

    def review_context(self, assignment):
        """Each image of the instance beside the caption the worker wrote for it."""
        task = self.context(assignment)
        captions = assignment.payload["captions"]
        return {"task": task, "pairs": [{"image": image, "caption": caption}
                                        for image, caption in zip(task["instance"]["images"], captions)]}

    def form_kwargs(self, assignment):
        return {"image_count": assignment.item.instance.image_links.count()}

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
        chosen = (
            item.assignments.counted()
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
            instance_status.captions_chosen(instance)
        return {"chosen_assignment": chosen.pk, "captions": made_current, "at": timezone.now().isoformat()}

    def on_completed(self, item):
        """With a verification follow-up round: queue the LLM reference for the instance after the commit
        (the task must see the captions, and a failing LLM call must not undo the worker's submission)."""
        from .. import pipeline

        follow_up = pipeline.usable_follow_up(item)
        if follow_up is None or item.instance.status != Instance.Status.AWAITING_REFERENCE:
            return
        instance_id, round_id = item.instance_id, follow_up.pk
        transaction.on_commit(lambda: pipeline.enqueue_reference_generation(instance_id, round_id), robust=True)

    def simulate(self, *, assignment, rng, accuracy):
        instance = assignment.item.instance
        count = instance.image_links.count()
        return {"captions": [
            f"Simulated caption of image {number} for: {instance.instruction[:200]}" for number in range(1, count + 1)
        ]}
