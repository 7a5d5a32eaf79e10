"""IRR: five reviews per image and language from a vision-capable LLM, for the images of the
project's review sets (the service of ``manage.py generate_reviews``)."""
from __future__ import annotations

from django import forms

from datasets_app.models import Image, Language, ReviewSet, Source
from datasets_app.review_generation import generate_review_sets

from .base import NoParameters, StepKind, outcome_of


class ReviewGenerationForm(NoParameters):
    languages = forms.MultipleChoiceField(choices=Language.choices, initial=[code for code, _ in Language.choices],
                                          widget=forms.CheckboxSelectMultiple)


class GenerateReviews(StepKind):
    name = "generate_reviews"
    label = "Generate IRR reviews"
    action = "generate reviews"
    form_class = ReviewGenerationForm

    @staticmethod
    def _images(project):
        return Image.objects.filter(project=project, review_sets__project=project).distinct().order_by("pk")

    def pending(self, *, project, parameters=None) -> int:
        languages = (parameters or {}).get("languages") or [code for code, _ in Language.choices]
        generated = ReviewSet.objects.filter(project=project, source=Source.LLM, language__in=languages).count()
        return max(0, self._images(project).count() * len(languages) - generated)

    def execute(self, *, project, llm, parameters):
        report = generate_review_sets(images=self._images(project), languages=parameters["languages"], llm=llm)
        return outcome_of(report, subject=lambda failure: f"image {failure.image_id} ({failure.language})",
                          result={"review_set_ids": report.review_set_ids})
