"""What every kind of step run provides, and the outcome it hands back.

A kind owns everything about itself: its label, the pipeline stage it acts on (for the board's
"next action"), the extra parameters its form asks for, how it checks them against the project,
how many subjects await it, and which service it calls (the same one its management command calls).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django import forms

from llm.params import LLMRunParams
from llm.steps import StepReport

from ..errors import RunRefused


@dataclass
class StepOutcome:
    summary: str
    failures: list[str] = field(default_factory=list)
    budget_reached: bool = False
    result: dict = field(default_factory=dict)


def outcome_of(report: StepReport, *, subject: Callable[[Any], str], result: dict | None = None,
               summary: str | None = None) -> StepOutcome:
    """A step report as an outcome: failures (and skips) as "subject: reason" messages."""
    messages = [f"{subject(failure)}: {failure.reason}" for failure in report.failures]
    messages += [f"{subject(skipped)}: skipped: {skipped.reason}" for skipped in report.skipped]
    return StepOutcome(
        summary=summary if summary is not None else report.summary(),
        failures=messages, budget_reached=report.budget_reached, result=result or {},
    )


def instance_subject(failure) -> str:
    return f"instance {failure.instance_id}"


class NoParameters(forms.Form):
    """A kind that asks for nothing beyond the model and the budget."""

    def __init__(self, *args, project=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project


class StepKind:
    name: str = ""
    label: str = ""
    action: str = ""  # the verb on the board's button
    stage: str = ""  # the Instance status whose instances this step moves on ("" for none)
    form_class: type[forms.Form] = NoParameters
    follows_predictions = False  # offered after a predictions upload ("judge against the board")
    feeds_results = False  # what it stores shows on the project's results page

    def form(self, data=None, *, project, prefix: str | None = None, initial: dict | None = None) -> forms.Form:
        return self.form_class(data, project=project, prefix=prefix or self.name, initial=initial)

    def parameters_after_predictions(self, *, project, new_models: list[str]) -> dict:
        """The parameters this step takes for models just uploaded (for kinds that follow predictions)."""
        return {}

    def check(self, *, project, parameters: dict) -> dict:
        """The parameters as they will be stored (JSON); refuses (RunRefused) what cannot run."""
        form = self.form_class(parameters, project=project)
        if not form.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
            raise RunRefused(f"{self.label}: {problems}")
        parameters = {key: value for key, value in form.cleaned_data.items() if value not in (None, "", [])}
        if not self.pending(project=project, parameters=parameters):
            raise RunRefused(f"{self.label}: nothing in this project to do")
        return parameters

    def pending(self, *, project, parameters: dict | None = None) -> int:
        """How many subjects this step would work on now."""
        raise NotImplementedError

    def execute(self, *, project, llm: LLMRunParams, parameters: dict) -> StepOutcome:
        """Run the step as ``llm`` says: the run's model, every request charged to the run's
        ``LLMRun`` (and kept to its budget cap), progress counted on the run."""
        raise NotImplementedError
