"""VisIT-Bench step 4: an LLM answers each instruction from its instruction-conditioned caption(s).

The prompt has the paper's shape ("Consider an image depicted by: '<caption>'. Now, briefly follow
this instruction, and you can add a short explanation: '<instruction>'. Response:"), with a
multi-image variant that enumerates the captions. Both are versioned prompt templates that
researchers may edit in the admin; each candidate records the template version that made it.

All requests of a call go through one ``run_batch``: answered requests come from the LLM layer's
cache, so a re-run after an interruption sends only what is missing, and a budget stops the batch
before it is exceeded.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.db import transaction

from llm.client import LLMClient, LLMResult, chat_request, configured_model, run_batch
from llm.models import LLMRun, PromptTemplate
from llm.services import create_run, ensure_template, render_template

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


def format_usd(amount: Decimal) -> str:
    """0.00052200 → 0.000522 and 0E-8 → 0: stored amounts carry eight decimal places."""
    return format(amount.normalize(), "f")


@dataclass
class ReferenceFailure:
    instance_id: int
    reason: str


@dataclass
class ReferenceReport:
    requested: int = 0
    created: int = 0
    sent: int = 0
    cache_hits: int = 0
    skipped: list[ReferenceFailure] = field(default_factory=list)
    failures: list[ReferenceFailure] = field(default_factory=list)
    candidate_ids: list[int] = field(default_factory=list)
    run_id: int | None = None
    run_status: str = ""
    spent_usd: Decimal = Decimal(0)

    def summary(self) -> str:
        return (
            f"{self.requested} instances: {self.created} reference candidates created, "
            f"{len(self.failures)} failed, {len(self.skipped)} skipped; {self.sent} requests sent, "
            f"{self.cache_hits} answered from the cache (spent ${format_usd(self.spent_usd)})"
        )

    def as_dict(self) -> dict:
        data = asdict(self)
        data["spent_usd"] = str(self.spent_usd)
        return data


def ensure_reference_templates() -> dict[str, PromptTemplate]:
    """The reference templates, adding our default text only for a name that has no version yet,
    so a version edited in the admin stays the one used."""
    templates = {}
    for name, (text, description) in DEFAULT_TEMPLATES.items():
        existing = PromptTemplate.objects.filter(name=name).order_by("-version").first()
        templates[name] = existing or ensure_template(name=name, text=text, description=description)
    return templates


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


@dataclass
class _Job:
    instance: Instance
    prompt: object  # RenderedPrompt
    request: object  # LLMRequest


def generate_references(
    *,
    instances: Iterable[Instance] | None = None,
    model: str | None = None,
    budget_usd: Decimal | float | str | None = None,
    progress: Callable[[LLMResult], object] | None = None,
    on_requests: Callable[[int], object] | None = None,
    client: LLMClient | None = None,
) -> ReferenceReport:
    """Ask the LLM for a reference candidate for each instance awaiting one, and store the answers.

    ``instances`` defaults to every instance in ``awaiting_reference``; others are skipped with the
    reason. An answered instance gets a ``ReferenceCandidate`` and moves to
    ``awaiting_verification``; a failed one stays where it is and is listed in the report.
    ``on_requests(n)`` is told how many requests are about to be sent, ``progress(result)`` is
    called per finished request. Raises ``LLMNotConfigured`` (nothing written) without a server.
    """
    model_name = configured_model(model, client)
    instances = instances_awaiting_reference() if instances is None else list(instances)
    report = ReferenceReport(requested=len(instances))
    ready: list[tuple[Instance, list[str]]] = []
    for instance in instances:
        if instance.status != Instance.Status.AWAITING_REFERENCE:
            report.skipped.append(ReferenceFailure(instance.pk, f"status is {instance.status}"))
            continue
        captions = current_instruction_captions(instance)
        if captions is None:
            report.skipped.append(
                ReferenceFailure(instance.pk, "no current instruction-conditioned caption for every image")
            )
            continue
        ready.append((instance, captions))
    if not ready:
        return report

    ensure_reference_templates()
    run: LLMRun = create_run(
        name=f"VisIT-Bench references ({model_name}, {len(ready)} instances)",
        budget_usd=budget_usd, purpose=PURPOSE,
    )
    report.run_id = run.pk
    jobs = []
    for instance, captions in ready:
        multi = instance.family.is_multi_image or len(captions) > 1
        prompt = reference_prompt(instruction=instance.instruction, captions=captions, multi_image=multi)
        attempt = instance.reference_candidates.filter(source=Source.LLM).count()
        sampling = {"temperature": 0} if attempt == 0 else {"temperature": REGENERATION_TEMPERATURE, "seed": attempt}
        request = chat_request(prompt, model=model, purpose=PURPOSE, max_tokens=MAX_TOKENS, **sampling)
        jobs.append(_Job(instance=instance, prompt=prompt, request=request))

    if on_requests is not None:
        on_requests(len(jobs))
    results = run_batch([job.request for job in jobs], run=run, progress=progress, client=client)
    report.sent, report.cache_hits = results.stats.sent, results.stats.cache_hits
    for job, result in zip(jobs, results):
        if not result.ok:
            report.failures.append(ReferenceFailure(job.instance.pk, f"{result.status}: {result.error}"))
            continue
        text = (result.text or "").strip()
        if not text:
            report.failures.append(ReferenceFailure(job.instance.pk, "the model answered with no text"))
            continue
        candidate = _store_candidate(job=job, text=text, model_name=result.model or model_name)
        if candidate is None:
            report.skipped.append(ReferenceFailure(job.instance.pk, "moved on while the request ran"))
            continue
        report.candidate_ids.append(candidate.pk)
        report.created += 1
    run.refresh_from_db(fields=["spent_usd", "status"])
    report.spent_usd, report.run_status = run.spent_usd, run.status
    return report


@transaction.atomic
def _store_candidate(*, job: _Job, text: str, model_name: str) -> ReferenceCandidate | None:
    # Locked and re-read: a concurrent run (a Celery task and a command, say) stores one candidate.
    instance = Instance.objects.select_for_update().get(pk=job.instance.pk)
    if instance.status != Instance.Status.AWAITING_REFERENCE:
        return None
    candidate = ReferenceCandidate(
        instance=instance,
        text=text,
        model_name=model_name,
        prompt=job.prompt.text,
        prompt_template=job.prompt.template_name,
        prompt_template_version=job.prompt.template_version,
        source=Source.LLM,
    )
    candidate.full_clean()
    candidate.save()
    instance_status.candidate_written(instance)
    return candidate
