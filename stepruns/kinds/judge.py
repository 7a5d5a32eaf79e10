"""The LLM pairwise judge over the project's model outputs (the service of ``manage.py judge``):
its battles feed the judge leaderboard."""
from __future__ import annotations

from django import forms

from datasets_app.models import ModelOutput
from evaluation.judge.services import judge_pairs

from .base import NoParameters, StepKind, outcome_of
from .references import project_instances

AGAINST = "against"
BACKED = "backed"
NONE = "none"


def project_models(project) -> list[str]:
    """The names of the models with outputs on the project's instances."""
    return sorted(set(ModelOutput.objects.filter(instance__family__project=project)
                      .values_list("model_name", flat=True)))


class JudgeForm(NoParameters):
    models = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        help_text="Every pair of these models is judged (both orders) on every instance where both answered.",
    )
    reference = forms.ChoiceField(
        choices=[(AGAINST, "also judge each model against the reference"),
                 (BACKED, "reference-backed: show the judge the verified reference, and judge against it"),
                 (NONE, "models only")],
        initial=AGAINST,
    )
    involving = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Only pairs involving",
        help_text="Judge only the pairs with one of these models on a side (new models against the board); "
                  "none ticked: every pair.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        names = project_models(self.project) if self.project is not None else []
        self.fields["models"].choices = [(name, name) for name in names]
        self.fields["models"].initial = names
        self.fields["involving"].choices = [(name, name) for name in names]

    def clean(self):
        cleaned = super().clean()
        models = cleaned.get("models") or []
        if models and len(models) < 2 and cleaned.get("reference") == NONE:
            raise forms.ValidationError("choose two models, or one model and the reference")
        strangers = set(cleaned.get("involving") or []) - set(models)
        if strangers:
            self.add_error("involving", f"also choose {', '.join(sorted(strangers))} among the models to judge")
        return cleaned


class JudgeOutputs(StepKind):
    name = "judge_outputs"
    label = "Judge model outputs"
    action = "judge"
    form_class = JudgeForm
    follows_predictions = True
    feeds_results = True

    def parameters_after_predictions(self, *, project, new_models: list[str]) -> dict:
        """The newcomers against every model on the board and the reference; the board's own pairs
        were judged before."""
        board = project_models(project)
        newcomers = [name for name in new_models if name in board]
        return {"models": board, "reference": AGAINST, "involving": newcomers}

    def pending(self, *, project, parameters=None) -> int:
        models = (parameters or {}).get("models") or project_models(project)
        return ModelOutput.objects.filter(instance__family__project=project, model_name__in=models).count()

    def execute(self, *, project, llm, parameters):
        reference = parameters.get("reference", AGAINST)
        report = judge_pairs(
            models=parameters["models"], with_reference=reference == BACKED, against_reference=reference != NONE,
            instances=project_instances(project), involving=parameters.get("involving") or None, llm=llm,
        )
        return outcome_of(
            report, result={"battle_ids": [battle.battle_id for battle in report.battles]},
            subject=lambda failure: f"instance {failure.instance_id}, {failure.model_a} vs {failure.model_b}",
        )
