"""Pairwise preference: a forced choice between two responses to one instance."""
from __future__ import annotations

from collections import Counter

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import AcceptedReference, ModelOutput

from .base import TaskType, instance_view, require_dict

CHOICES = ("left", "right")


def side_texts(item) -> dict[str, str]:
    return {
        "a": item.output_a.text,
        "b": item.output_b.text if item.output_b_id else item.reference.text,
    }


class PairwiseTask(TaskType):
    key = "pairwise"
    label = gettext_lazy("Pairwise preference")
    template_name = "annotation/tasks/pairwise.html"
    instructions = gettext_lazy(
        "Read the instruction and look at the image(s). Then choose the better of the two responses, "
        "judging accuracy, helpfulness and detail. You must pick one; if they seem equally good, pick "
        "either. Keys: 1 or ← for the left response, 2 or → for the right one, Enter to submit."
    )

    def make_item(self, *, round, target, position):
        from ..models import WorkItem

        try:
            side_a, side_b = target
        except (TypeError, ValueError):
            raise ValidationError("pairwise items are (output, output) or (output, accepted reference)") from None
        if not isinstance(side_a, ModelOutput):
            raise ValidationError("the first side of a pairwise item is a model output")
        if isinstance(side_b, ModelOutput):
            if side_b.instance_id != side_a.instance_id:
                raise ValidationError("both outputs of a pair answer the same instance")
            if side_b.pk == side_a.pk:
                raise ValidationError("a pair needs two different outputs")
            return WorkItem(
                round=round, position=position, output_a=side_a, output_b=side_b,
                side_a_name=side_a.model_name, side_b_name=side_b.model_name,
            )
        if isinstance(side_b, AcceptedReference):
            if side_b.instance_id != side_a.instance_id:
                raise ValidationError("the reference answers the same instance as the output")
            return WorkItem(
                round=round, position=position, output_a=side_a, reference=side_b,
                side_a_name=side_a.model_name, side_b_name=settings.ANNOTATION_REFERENCE_SIDE_NAME,
            )
        raise ValidationError("the second side of a pairwise item is a model output or an accepted reference")

    def present(self, *, item, rng):
        left = rng.choice(["a", "b"])
        return {"left": left, "right": "b" if left == "a" else "a"}

    def context(self, assignment):
        texts = side_texts(assignment.item)
        return {
            "instance": instance_view(assignment.item.output_a.instance),
            "left": {"text": texts[assignment.presentation["left"]]},
            "right": {"text": texts[assignment.presentation["right"]]},
        }

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        choice = data.get("choice")
        if not choice:
            raise ValidationError(_("Choose the better response (left or right)."))
        if choice not in CHOICES:
            raise ValidationError(_("The choice must be left or right."))
        return {"choice": choice}

    def result(self, assignment):
        return {"winner": assignment.presentation[assignment.payload["choice"]]}

    def aggregate(self, item):
        """Majority winner and its size (paper: 5/5, 4/5, 3/5 agreement); an even split is a tie."""
        from ..models import Assignment

        winners = Counter(
            result["winner"]
            for result in item.assignments.submitted()
            .exclude(review_status=Assignment.ReviewStatus.REJECTED)
            .values_list("result", flat=True)
        )
        if not winners:
            return None
        votes = {"a": winners.get("a", 0), "b": winners.get("b", 0)}
        if votes["a"] == votes["b"]:
            winner = "tie"
        else:
            winner = "a" if votes["a"] > votes["b"] else "b"
        return {"winner": winner, "votes": votes, "agreement": max(votes.values()), "judgments": sum(votes.values())}
