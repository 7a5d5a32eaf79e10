"""Review ranking (IRR): order five reviews of an image by reasonableness and objectivity."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import ReviewSet

from .base import ListField, StrictIntegerField, TaskType, image_view


class RankingForm(forms.Form):
    order = ListField(
        base_field=StrictIntegerField(min_value=1, error_messages={"invalid": gettext_lazy("not a review id")}),
        item_label=gettext_lazy("Place %(n)d"),
        error_messages={
            "required": gettext_lazy("The ranking is missing: send the review ids in order, best first."),
            "invalid_list": gettext_lazy("The ranking is missing: send the review ids in order, best first."),
            "invalid_item": gettext_lazy("The ranking must list review ids."),
        },
    )

    def __init__(self, *args, expected_ids: list[int], **kwargs):
        super().__init__(*args, **kwargs)
        self.expected_ids = set(expected_ids)

    def clean_order(self):
        order = self.cleaned_data["order"]
        if len(order) != len(self.expected_ids) or set(order) != self.expected_ids:
            raise ValidationError(
                _("The ranking must contain each of the %(n)d reviews exactly once.") % {"n": len(self.expected_ids)}
            )
        return order


class RankingTask(TaskType):
    key = "ranking"
    label = gettext_lazy("Review ranking")
    template_name = "annotation/tasks/ranking.html"
    script_name = "annotation/tasks/ranking.js"
    form_class = RankingForm
    target_model = ReviewSet
    target_fields = ("review_set",)
    yields = "rankings"
    instructions = gettext_lazy(
        "Look at the image and read the five reviews. Put them in order, best first: a good review is "
        "reasonable (truthful, consistent and informative about the image) and objective. Drag a "
        "review, use its Up and Down buttons, or focus it and press the ↑ and ↓ keys."
    )

    def check_targets(self, item):
        super().check_targets(item)
        review_set = item.review_set
        if review_set.reviews.count() != ReviewSet.REVIEWS_PER_SET:
            raise ValidationError({"review_set": _("Review set %(id)s does not have %(n)d reviews.")
                                   % {"id": review_set.pk, "n": ReviewSet.REVIEWS_PER_SET}})
        if review_set.language != item.round.language:
            raise ValidationError({"review_set": _("Review set %(id)s is in %(set)s, the round is in %(round)s.")
                                   % {"id": review_set.pk, "set": review_set.language,
                                      "round": item.round.language}})

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

    def form_kwargs(self, assignment):
        return {"expected_ids": assignment.presentation["review_order"]}

    def result(self, assignment):
        return {"ranks": {str(review_id): rank for rank, review_id in enumerate(assignment.payload["order"], 1)}}

    def simulate(self, *, assignment, rng, accuracy):
        order = list(assignment.presentation["review_order"])
        rng.shuffle(order)
        return {"order": order}

    def judgment_queryset(self, assignments):
        return assignments.select_related("item__review_set").prefetch_related("item__review_set__reviews")

    def judgment_rows(self, assignment):
        """Long format: one row per (review set, annotator, review), rank 1 = best; ``item_id`` is the
        review set (the IRR item), so sets ranked in several rounds pool together."""
        review_set = assignment.item.review_set
        prompt_ranks = {review.pk: review.prompt_rank for review in review_set.reviews.all()}
        return [
            {
                "item_id": review_set.pk,
                "annotator_id": assignment.worker_id,
                "review_id": review_id,
                "rank": rank,
                "prompt_rank": prompt_ranks.get(review_id),
                "language": review_set.language,
                "category": review_set.category,
                "round_id": assignment.round_id,
                "work_item_id": assignment.item_id,
                "assignment_id": assignment.pk,
            }
            for rank, review_id in enumerate(assignment.payload["order"], start=1)
        ]
