"""Review ranking (IRR): order five reviews of an image by reasonableness and objectivity."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from crowdbench.input_checks import strict_int
from datasets_app.models import ReviewSet

from .base import TaskType, image_view, require_dict


class RankingTask(TaskType):
    key = "ranking"
    label = gettext_lazy("Review ranking")
    template_name = "annotation/tasks/ranking.html"
    instructions = gettext_lazy(
        "Look at the image and read the five reviews. Put them in order, best first: a good review is "
        "reasonable (truthful, consistent and informative about the image) and objective. Drag a "
        "review, use its Up and Down buttons, or focus it and press the ↑ and ↓ keys."
    )

    def make_item(self, *, round, target, position):
        from ..models import WorkItem

        if not isinstance(target, ReviewSet):
            raise ValidationError("ranking items are review sets")
        if target.reviews.count() != ReviewSet.REVIEWS_PER_SET:
            raise ValidationError(f"review set {target.pk} does not have {ReviewSet.REVIEWS_PER_SET} reviews")
        if target.language != round.language:
            raise ValidationError(
                f"review set {target.pk} is in {target.language}, the round is in {round.language}"
            )
        return WorkItem(round=round, position=position, review_set=target)

    def present(self, *, item, rng):
        # Shown in random order so the prompt rank (the stored order) gives no hint.
        review_ids = list(item.review_set.reviews.values_list("pk", flat=True))
        rng.shuffle(review_ids)
        return {"review_order": review_ids}

    def context(self, assignment):
        review_set = assignment.item.review_set
        texts = dict(review_set.reviews.values_list("pk", "text"))
        return {
            "image": image_view(review_set.image),
            "category": review_set.category,
            "reviews": [{"id": pk, "text": texts[pk]} for pk in assignment.presentation["review_order"]],
        }

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        order = data.getlist("order") if hasattr(data, "getlist") else data.get("order")
        if not isinstance(order, list) or not order:
            raise ValidationError(_("The ranking is missing: send the review ids in order, best first."))
        # JSON must carry integers (3.9 or "3" are refused); a form can only carry digit strings.
        order = [strict_int(value, allow_digit_strings=hasattr(data, "getlist")) for value in order]
        if None in order:
            raise ValidationError(_("The ranking must list review ids."))
        expected = set(assignment.presentation["review_order"])
        if len(order) != len(expected) or set(order) != expected:
            raise ValidationError(
                _("The ranking must contain each of the %(n)d reviews exactly once.") % {"n": len(expected)}
            )
        return {"order": order}

    def result(self, assignment):
        return {"ranks": {str(review_id): rank for rank, review_id in enumerate(assignment.payload["order"], 1)}}
