"""VisIT-Bench step 4: an LLM answers each instruction from its instruction-conditioned caption(s).

The prompt has the paper's shape ("Consider an image depicted by: '<caption>'. Now, briefly follow
this instruction, and you can add a short explanation: '<instruction>'. Response:"), with a
multi-image variant that enumerates the captions. Both are versioned prompt templates that
researchers may edit in the admin; each candidate records the template version that made it.

The step runs on the LLM-step skeleton (``llm.steps``): answered requests come from the LLM
layer's cache, so a re-run after an interruption sends only what is missing, and a budget stops
the batch before it is exceeded.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from llm.client import chat_request, configured_model
from llm.models import PromptTemplate
from llm.services import ensure_default_templates, render_template
from llm.params import LLMRunParams
from llm.steps import Answer, LLMStep, StepReport
from kernel.wording import counted

from . import instance_status
from .models import Caption, Instance, ReferenceCandidate, Source

PURPOSE = "visitbench_reference"
SINGLE_TEMPLATE = "visitbench-reference-single"
MULTI_TEMPLATE = "visitbench-reference-multi"
DEFAULT_TEMPLATES = {
    SINGLE_TEMPLATE: (
        "Consider an image depicted by: '{caption}'. Now, briefly follow this instruction, "
        "and you can add a short explanation: '{instruction}'. Response:",
        "VisIT-Bench reference candidate, one image (the paper's prompt).",
    ),
    MULTI_TEMPLATE: (
        "Consider images depicted by:\n{captions}\nNow, briefly follow this instruction, "
        "and you can add a short explanation: '{instruction}'. Response:",
        "VisIT-Bench reference candidate, several images: {captions} lists \"Image n: '<caption>'\".",
    ),
}
MAX_TOKENS = 512
# A regenerated candidate must not be the cached first answer: sample instead, seeded by attempt.
REGENERATION_TEMPERATURE = 0.7


@dataclass
class ReferenceFailure:
    instance_id: int
    reason: str


@dataclass
class ReferenceReport(StepReport):
    candidate_ids: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{counted(self.requested, 'instance')}: {counted(self.created, 'reference candidate')} created, "
            f"{len(self.failures)} failed, {len(self.skipped)} skipped; {self.requests_summary()}"
        )


def ensure_reference_templates() -> dict[str, PromptTemplate]:
    """The reference templates; a version edited in the admin stays the one used."""
    return ensure_default_templates(DEFAULT_TEMPLATES)


def format_captions(captions: list[str]) -> str:
    return "\n".join(f"Image {number}: '{text}'" for number, text in enumerate(captions, start=1))


def reference_prompt(*, instruction: str, captions: list[str], multi_image: bool):
    """The rendered prompt (a ``RenderedPrompt`` remembering its template version)."""
    if multi_image:
        return render_template(MULTI_TEMPLATE, captions=format_captions(captions), instruction=instruction)
    return render_template(SINGLE_TEMPLATE, caption=captions[0], instruction=instruction)


def current_instruction_captions(instance: Instance) -> list[str] | None:
    """One current instruction-conditioned caption per image, in image order; None if any is missing."""
    positions = list(instance.image_links.order_by("position").values_list("position", flat=True))
    texts = dict(
        instance.captions.filter(kind=Caption.Kind.INSTRUCTION_CONDITIONED, is_current=True)
        .values_list("position", "text")
    )
    if not positions or any(not (texts.get(position) or "").strip() for position in positions):
        return None
    return [texts[position] for position in positions]


def instances_by_id(instance_ids: Iterable[int]) -> list[Instance]:
    """The instances with these ids, in the order given; raises LookupError naming missing ids."""
    wanted = list(dict.fromkeys(instance_ids))
    found = {instance.pk: instance for instance in Instance.objects.select_related("family").filter(pk__in=wanted)}
    missing = [str(pk) for pk in wanted if pk not in found]
    if missing:
        raise LookupError(f"no instance with id {', '.join(missing)}")
    return [found[pk] for pk in wanted]


def instances_awaiting_reference(*, instance_ids: Iterable[int] | None = None) -> list[Instance]:
    """Instances in ``awaiting_reference``, or the given ones whatever their status (all must
    exist; ``generate_references`` reports those not awaiting a reference)."""
    if instance_ids is not None:
        return instances_by_id(instance_ids)
    return list(Instance.objects.select_related("family").filter(status=Instance.Status.AWAITING_REFERENCE)
                .order_by("pk"))


def generate_references(
    *,
    instances: Iterable[Instance] | None = None,
    llm: LLMRunParams = LLMRunParams(),
) -> ReferenceReport:
    """Ask the LLM for a reference candidate for each instance awaiting one, and store the answers.

    ``instances`` defaults to every instance in ``awaiting_reference``; others are skipped with the
    reason. An answered instance gets a ``ReferenceCandidate`` and moves to
    ``awaiting_verification``; a failed one stays where it is and is listed in the report.
    The requests go as ``llm`` says (model, server, run or budget, progress callbacks). Raises
    ``LLMNotConfigured`` (nothing written) without a server.
    """
    model = llm.model
    model_name = configured_model(model, llm.client)
    instances = instances_awaiting_reference() if instances is None else list(instances)
    report = ReferenceReport(requested=len(instances))
    step = LLMStep(report=report, purpose=PURPOSE, failure=lambda instance, reason: ReferenceFailure(instance.pk, reason),
                   llm=llm)
    ready: list[tuple[Instance, list[str]]] = []
    for instance in instances:
        if instance.status != Instance.Status.AWAITING_REFERENCE:
            step.skip(instance, f"status is {instance.status}")
            continue
        captions = current_instruction_captions(instance)
        if captions is None:
            step.skip(instance, "no current instruction-conditioned caption for every image")
            continue
        ready.append((instance, captions))
    if not ready:
        return report

    ensure_reference_templates()
    step.start(name=f"VisIT-Bench references ({model_name}, {len(ready)} instances)")
    jobs = []
    for instance, captions in ready:
        multi = instance.family.is_multi_image or len(captions) > 1
        prompt = reference_prompt(instruction=instance.instruction, captions=captions, multi_image=multi)
        attempt = instance.reference_candidates.filter(source=Source.LLM).count()
        sampling = {"temperature": 0} if attempt == 0 else {"temperature": REGENERATION_TEMPERATURE, "seed": attempt}
        jobs.append(step.job(instance, lambda: chat_request(prompt, model=model, purpose=PURPOSE,
                                                             max_tokens=MAX_TOKENS, **sampling), prompt=prompt))
    jobs = [job for job in jobs if job is not None]
    for answer in step.ask(jobs):
        candidate = _store_candidate(answer=answer, model_name=answer.model or model_name)
        if candidate is None:
            step.skip(answer.job.subject, "moved on while the request ran")
            continue
        report.candidate_ids.append(candidate.pk)
        report.created += 1
    return step.finish()


@transaction.atomic
def _store_candidate(*, answer: Answer, model_name: str) -> ReferenceCandidate | None:
    # Locked and re-read: a concurrent run (a Celery task and a command, say) stores one candidate.
    instance = Instance.objects.select_for_update().get(pk=answer.job.subject.pk)
    if instance.status != Instance.Status.AWAITING_REFERENCE:
        return None
    prompt = answer.job.prompt
    candidate = ReferenceCandidate(
        instance=instance,
        text=answer.text,
        model_name=model_name,
        prompt=prompt.text,
        prompt_template=prompt.template_name,
        prompt_template_version=prompt.template_version,
        source=Source.LLM,
    )
    candidate.full_clean()
    candidate.save()
    instance_status.candidate_written(instance)
    return candidate
