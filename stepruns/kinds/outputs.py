"""A candidate model's outputs on the project's verified instances (the service of
``manage.py generate_outputs``, against the configured LLM server)."""
from __future__ import annotations

from django import forms

from datasets_app.model_outputs import generate_outputs
from datasets_app.models import Instance, ModelOutput

from .base import NoParameters, StepKind, instance_subject, outcome_of
from .references import project_instances

MAX_NAME = ModelOutput._meta.get_field("model_name").max_length


class OutputsForm(NoParameters):
    output_name = forms.CharField(
        required=False, max_length=MAX_NAME,
        help_text="Name the outputs are stored under on the board (default: the model).",
    )


class GenerateOutputs(StepKind):
    name = "generate_outputs"
    label = "Generate model outputs"
    action = "generate outputs"
    stage = Instance.Status.VERIFIED
    form_class = OutputsForm

    def pending(self, *, project, parameters=None) -> int:
        return project_instances(project).filter(status=Instance.Status.VERIFIED).count()

    def execute(self, *, project, llm, parameters):
        instances = project_instances(project).filter(status=Instance.Status.VERIFIED).order_by("pk")
        report = generate_outputs(llm=llm, instances=instances, output_name=parameters.get("output_name"))
        return outcome_of(report, subject=instance_subject, result={"model": report.model})
