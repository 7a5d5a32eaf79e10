"""IRR: rank the project's review sets with a ranker that asks the LLM server (the service of
``manage.py irr_rank``)."""
from __future__ import annotations

from django import forms

from datasets_app.models import Language, ReviewSet
from evaluation.rankers.registry import RANKERS, make_ranker, ranker_class
from evaluation.selectors import review_items
from evaluation.services import rank_and_store
from llm.models import LLMRun

from .base import NoParameters, StepKind, StepOutcome


def llm_rankers() -> list[str]:
    return [name for name in RANKERS if ranker_class(name).uses_llm]


class RankForm(NoParameters):
    ranker = forms.ChoiceField(choices=())
    language = forms.ChoiceField(choices=[("", "both")] + list(Language.choices), required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ranker"].choices = [(name, name) for name in llm_rankers()]


class RankReviews(StepKind):
    name = "rank_reviews"
    label = "Rank reviews with a model"
    action = "rank"
    form_class = RankForm

    @staticmethod
    def _items(project, parameters):
        ids = list(ReviewSet.objects.filter(project=project).values_list("pk", flat=True))
        return review_items(language=(parameters or {}).get("language") or None, review_set_ids=ids) if ids else []

    def pending(self, *, project, parameters=None) -> int:
        return len(self._items(project, parameters))

    def execute(self, *, project, llm, parameters):
        name = parameters["ranker"]
        items = self._items(project, parameters)
        ranker = make_ranker(name, model=llm.model, llm=llm)
        outcome = rank_and_store(ranker=ranker, ranker_kind=name, items=items)
        llm.run.refresh_from_db(fields=["status"])
        scored = outcome.scores["item_id"].nunique()
        return StepOutcome(
            summary=f"{name}: {scored} of {len(items)} review sets scored ({outcome.stored} review scores stored)",
            failures=[f"review set {missing.item_id}: {missing.reason}" for missing in outcome.unscored],
            budget_reached=llm.run.status == LLMRun.Status.BUDGET_EXCEEDED,
        )
