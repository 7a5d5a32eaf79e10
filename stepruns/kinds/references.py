"""Reference candidates from the LLM: for instances awaiting one, and afresh for discarded ones
(the services of ``manage.py generate_references`` and ``regenerate_references``)."""
from __future__ import annotations

from django import forms

from annotation.models import CollectionRound
from annotation.pipeline import generate_and_route_references, regenerate_discarded
from datasets_app.models import Instance

from .base import NoParameters, StepKind, instance_subject, outcome_of

S = Instance.Status


def project_instances(project):
    return Instance.objects.filter(family__project=project)


def _pipeline_outcome(report):
    outcome = outcome_of(report.references, subject=instance_subject,
                         result={"candidate_ids": report.references.candidate_ids,
                                 "reset_instances": report.reset_instances})
    outcome.summary = f"{outcome.summary}. {report.routing.summary()}"
    return outcome


class GenerateReferences(StepKind):
    name = "generate_references"
    label = "Generate references"
    action = "generate"
    stage = S.AWAITING_REFERENCE

    def _ids(self, project) -> list[int]:
        return list(project_instances(project).filter(status=S.AWAITING_REFERENCE).order_by("pk")
                    .values_list("pk", flat=True))

    def pending(self, *, project, parameters=None) -> int:
        return len(self._ids(project))

    def execute(self, *, project, llm, parameters):
        # The board asks for every instance awaiting a reference; a caption's completion names its
        # instance and the verification round its item goes to (``stepruns.services.generate_wanted_reference``).
        ids = parameters.get("instance_ids") or self._ids(project)
        instances = list(project_instances(project).filter(pk__in=ids).select_related("family").order_by("pk"))
        round_id = parameters.get("verification_round_id")
        verification_round = CollectionRound.objects.filter(pk=round_id).first() if round_id else None
        report = generate_and_route_references(instances=instances, verification_round=verification_round, llm=llm)
        return _pipeline_outcome(report)


class RegenerateForm(NoParameters):
    reasons = forms.MultipleChoiceField(
        choices=[(value, label) for value, label in Instance.DiscardReason.choices if value],
        initial=[Instance.DiscardReason.RESPONSE], widget=forms.CheckboxSelectMultiple,
        help_text="Discarded instances with these reasons get a new candidate.",
    )


class RegenerateReferences(StepKind):
    name = "regenerate_references"
    label = "Regenerate discarded references"
    action = "regenerate"
    stage = S.DISCARDED
    form_class = RegenerateForm

    @staticmethod
    def _ids(project, parameters) -> list[int]:
        reasons = (parameters or {}).get("reasons") or [Instance.DiscardReason.RESPONSE]
        return list(project_instances(project).filter(status=S.DISCARDED, discard_reason__in=reasons)
                    .order_by("pk").values_list("pk", flat=True))

    def pending(self, *, project, parameters=None) -> int:
        return len(self._ids(project, parameters))

    def execute(self, *, project, llm, parameters):
        report = regenerate_discarded(reasons=parameters["reasons"], instance_ids=self._ids(project, parameters),
                                      llm=llm)
        return _pipeline_outcome(report)
