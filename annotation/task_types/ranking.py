"""Review ranking (IRR): order five reviews of an image by reasonableness and objectivity."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import Review, ReviewSet

from .base import ListField, StrictIntegerField, TaskType, image_view
from .sources import ItemSource, ItemSpec, SourceResult, limit_field, limited, queued_targets


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

    def __init__(self, *args, expected_ids: list[int], review_of: dict[int, int] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.expected_ids = set(expected_ids)
        # Shown id -> review id: the page's ids are translated back so the payload stays in review ids.
        self.review_of = review_of

    def clean_order(self):
        order = self.cleaned_data["order"]
        if len(order) != len(self.expected_ids) or set(order) != self.expected_ids:
            raise ValidationError(
                _("The ranking must contain each of the %(n)d reviews exactly once.") % {"n": len(self.expected_ids)}
            )
        if self.review_of is not None:
            order = [self.review_of[shown] for shown in order]
        return order


# Shown review ids are below 2**48 so a browser's JavaScript numbers hold them exactly.
SHOWN_ID_BITS = 48


def shown_review_ids(assignment) -> dict[int, int]:
    """Review id -> the id this assignment's page shows for it.

    A keyed hash of (assignment, review): stable for the assignment without storing anything, unrelated
    across assignments, and in no relation to the review ids (which follow the prompt rank), so sorting
    the shown ids says nothing about the expected order.
    """
    shown = {}
    for review_id in assignment.presentation["review_order"]:
        counter = 0
        while True:
            digest = salted_hmac("annotation.ranking.shown-review-id",
                                 f"{assignment.pk}:{review_id}:{counter}").digest()
            value = int.from_bytes(digest[:SHOWN_ID_BITS // 8], "big") or 1
            if value not in shown.values():
                break
            counter += 1  # a collision within one set is astronomically rare; draw again if it happens
        shown[review_id] = value
    return shown


def shown_order(assignment, review_ids: list[int]) -> list[int]:
    """``review_ids`` as this assignment's page names them: what a client posts to rank in that order."""
    shown = shown_review_ids(assignment)
    return [shown[review_id] for review_id in review_ids]


class ReviewSetsParams(forms.Form):
    category = forms.CharField(required=False, max_length=200, help_text="Only review sets of this category.")
    limit = limit_field()


class ReviewSetsSource(ItemSource):
    key = "review_sets"
    label = "Review sets"
    description = ("The project's complete review sets in the round's language (IRR ranks each language apart), "
                   "not already waiting in an item of a ranking round that is not closed or cancelled.")
    params_form = ReviewSetsParams

    def plan(self, *, project, params, language, rng):
        review_sets = (
            ReviewSet.objects.filter(project=project, language=language)
            .annotate(review_count=Count("reviews")).filter(review_count=ReviewSet.REVIEWS_PER_SET).order_by("pk")
        )
        if params.get("category"):
            review_sets = review_sets.filter(category=params["category"])
        queued = queued_targets(targets=review_sets, task_type=RankingTask.key, column="review_set")
        specs = [ItemSpec(target=review_set, label=f"{review_set} {review_set.category}".strip())
                 for review_set in review_sets if review_set.pk not in queued]
        return SourceResult(specs=limited(specs, params.get("limit")), notes={"already_queued": len(queued)})

class RankingTask(TaskType):
    key = "ranking"
    label = gettext_lazy("Review ranking")
    template_name = "annotation/tasks/ranking.html"
    review_template_name = "annotation/review/ranking.html"
    script_name = "annotation/tasks/ranking.js"
    form_class = RankingForm
    target_model = ReviewSet
    target_fields = ("review_set",)
    item_sources = (ReviewSetsSource(),)
    yields = "rankings"
    coverage_lookup = "review_set__category"
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
        shown = shown_review_ids(assignment)
        return {
            "image": image_view(review_set.image),
            "category": review_set.category,
            "reviews": [{"id": shown[pk], "text": texts[pk]} for pk in assignment.presentation["review_order"]],
        }

    def form_kwargs(self, assignment):
        shown = shown_review_ids(assignment)
        return {"expected_ids": list(shown.values()), "review_of": {value: pk for pk, value in shown.items()}}

    def result(self, assignment):
        return {"ranks": {str(review_id): rank for rank, review_id in enumerate(assignment.payload["order"], 1)}}

    def answers(self, assignment):
        return {"order": shown_order(assignment, assignment.payload["order"])}

    def history_answers(self, assignments):
        """A ranking as the reviews' places in their set, best first ("review 3, 1, 5, 2, 4"), as the
        review set's page lists them (by prompt rank): the ids the worker's page showed say nothing
        to a reader."""
        places: dict[int, int] = {}
        counted: dict[int, int] = {}
        for review_id, review_set_id in (
                Review.objects.filter(review_set_id__in={assignment.item.review_set_id for assignment in assignments})
                .order_by("review_set_id", "prompt_rank", "pk").values_list("pk", "review_set_id")):
            counted[review_set_id] = counted.get(review_set_id, 0) + 1
            places[review_id] = counted[review_set_id]
        return {assignment.pk: {_("ranked, best first"): _("review %(places)s") % {
                    "places": ", ".join(str(places.get(review_id, "?")) for review_id in assignment.payload["order"])}}
                for assignment in assignments}

    def review_context(self, assignment):
        """The reviews in the order the page showed them, and the worker's ranking (best first), each
        review with its place in the shown order."""
        task = self.context(assignment)
        texts = dict(assignment.item.review_set.reviews.values_list("pk", "text"))
        shown_place = {pk: place for place, pk in enumerate(assignment.presentation["review_order"], 1)}
        ranking = [{"text": texts[pk], "shown_place": shown_place[pk]} for pk in assignment.payload["order"]]
        return {"task": task, "images": [task["image"]], "ranking": ranking}

    def simulate(self, *, assignment, rng, accuracy):
        """With probability ``accuracy`` a careful worker: the prompt-rank order (the reviews were asked
        for in decreasing reasonableness) with at most one neighbouring pair swapped; otherwise a
        careless one in random order. Careful workers agree, so their items pass IRR's filter."""
        shown = shown_review_ids(assignment)
        prompt_ranks = dict(assignment.item.review_set.reviews.values_list("pk", "prompt_rank"))
        order = sorted(shown, key=lambda review_id: prompt_ranks.get(review_id, 0))
        if rng.random() < accuracy:
            if len(order) > 1 and rng.random() < 0.5:
                at = rng.randrange(len(order) - 1)
                order[at], order[at + 1] = order[at + 1], order[at]
        else:
            rng.shuffle(order)
        return {"order": [shown[review_id] for review_id in order]}

    def agreement_so_far(self, round):
        """IRR agreement: per review set the Spearman rho of its best-agreeing annotator pair."""
        from stats import irr

        from ..selectors import ranking_judgments

        rankings = ranking_judgments(round)
        label = _("IRR best-pair agreement")
        if rankings.empty:
            return {"label": label, "measures": [{"label": _("Review sets ranked"), "value": 0}], "levels": []}
        result = irr.agreement(rankings[[irr.ITEM, irr.ANNOTATOR, irr.REVIEW, irr.RANK]])
        evaluable = result.evaluable
        return {
            "label": label,
            "measures": [
                {"label": _("Review sets ranked"), "value": len(result.best_rho)},
                {"label": _("Review sets with two or more rankings"), "value": int(evaluable.sum())},
                {"label": _("Mean best-pair rho"),
                 "value": float(result.best_rho[evaluable].mean()) if evaluable.any() else None},
                {"label": _("Review sets kept at rho ≥ %(threshold)s") % {"threshold": irr.DEFAULT_THRESHOLD},
                 "value": int(result.kept.sum())},
            ],
            "levels": [],
        }

    def judgment_queryset(self, assignments):
        return assignments.select_related("item__review_set").prefetch_related("item__review_set__reviews")

    def judgment_table(self, assignments):
        """``judgment_rows`` of every judgment, read as plain values (two queries, no model objects)."""
        judgments = list(assignments.values_list(
            "pk", "worker_id", "round_id", "item_id", "item__review_set_id", "item__review_set__language",
            "item__review_set__category", "payload"))
        if not judgments:
            return []
        prompt_ranks = {
            review_id: (review_set_id, prompt_rank) for review_id, review_set_id, prompt_rank in
            Review.objects.filter(review_set_id__in=assignments.values("item__review_set_id"))
            .values_list("pk", "review_set_id", "prompt_rank")
        }
        rows = []
        for assignment_id, worker_id, round_id, item_id, review_set_id, language, category, payload in judgments:
            for rank, review_id in enumerate(payload["order"], start=1):
                owner, prompt_rank = prompt_ranks.get(review_id, (None, None))
                rows.append({
                    "item_id": review_set_id, "annotator_id": worker_id, "review_id": review_id, "rank": rank,
                    "prompt_rank": prompt_rank if owner == review_set_id else None, "language": language,
                    "category": category, "round_id": round_id, "work_item_id": item_id,
                    "assignment_id": assignment_id,
                })
        return rows

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
