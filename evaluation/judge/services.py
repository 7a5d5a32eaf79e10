"""Running the LLM pairwise judge and storing its battles (DESIGN §3.3).

Every pair of the given models (and, when asked, each model against the accepted reference) is
judged on every instance where both sides have an output, in both orderings, through the LLM-step
skeleton: one run, one budget, the response cache (a re-run sends nothing), tokens and cost on
every call. A query whose answer lacks the closing phrase goes to the extraction model; still
nothing is a tie vote. A battle is stored only once both of its queries were answered.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import pandas as pd
from django.db import transaction

from datasets_app.models import AcceptedReference, Instance, ModelOutput
from datasets_app.reference_generation import current_instruction_captions
from kernel.errors import ServiceError
from llm.client import LLMResult, chat_request, configured_model
from llm.params import LLMRunParams
from llm.steps import Job, LLMStep, StepReport
from stats.ratings import compute_ratings

from ..models import JudgedBattle
from ..stored_results import judgments_changed_on_commit
from . import prompts
from .verdicts import battle_winner, parse_extracted, parse_verdict, position_bias, verdict_for

PURPOSE = "visitbench_judge"
EXTRACTION_PURPOSE = "visitbench_judge_extraction"
REFERENCE = "reference"  # the name of the accepted reference as a side of a battle
MAX_TOKENS = 1024  # room for the step-by-step reasoning before the verdict
EXTRACTION_MAX_TOKENS = 5


class JudgeInputError(ServiceError):
    """The judge cannot run with these models or options."""


@dataclass(frozen=True)
class _Pair:
    instance: Instance
    model_a: str
    model_b: str
    text_a: str
    text_b: str
    captions: tuple[str, ...]
    reference: str | None  # shown to the judge in the reference-backed mode


@dataclass
class JudgeFailure:
    instance_id: int
    model_a: str
    model_b: str
    query: int
    reason: str


@dataclass
class BattleOutcome:
    instance_id: int
    model_a: str
    model_b: str
    verdicts: list[str | None]
    winner: str
    battle_id: int | None = None

    def as_json(self) -> dict:
        return {"instance_id": self.instance_id, "model_a": self.model_a, "model_b": self.model_b,
                "verdicts": list(self.verdicts), "winner": self.winner}


@dataclass
class JudgeReport(StepReport):
    judge_model: str = ""
    extractor_model: str = ""
    with_reference: bool = False
    prompt_template: str = ""
    prompt_version: int | None = None
    extractions: int = 0
    battles: list[BattleOutcome] = field(default_factory=list)

    @property
    def position_bias(self) -> dict:
        return position_bias((battle.verdicts[0], battle.verdicts[1]) for battle in self.battles)

    def ratings(self) -> list[dict]:
        """Online Elo of this call's battles (DESIGN §3.1), best first."""
        if not self.battles:
            return []
        frame = pd.DataFrame([(b.model_a, b.model_b, b.winner) for b in self.battles],
                             columns=["model_a", "model_b", "winner"])
        return compute_ratings(frame, method="elo").to_dict()["models"]

    def summary(self) -> str:
        ties = sum(battle.winner == "tie" for battle in self.battles)
        bias = self.position_bias
        rate = bias["followed_position_rate"]
        return (
            f"{self.requested} pairs to judge: {len(self.battles)} battles judged ({ties} ties), "
            f"{len(self.skipped)} skipped, {len(self.failures)} queries failed, {self.extractions} verdicts "
            f"extracted by {self.extractor_model}; verdict followed the position in "
            f"{'-' if rate is None else f'{rate:.0%}'} of decided battles; {self.requests_summary()}"
        )

    def as_json(self) -> dict:
        return {"battles": [battle.as_json() for battle in self.battles], "position_bias": self.position_bias,
                "ratings": self.ratings()}


def _model_pairs(models: Sequence[str], against_reference: bool,
                 involving: Sequence[str] | None = None) -> list[tuple[str, str]]:
    pairs = list(combinations(models, 2))
    if against_reference:
        pairs += [(model, REFERENCE) for model in models]
    if involving:  # a newcomer against the board: the board's own pairs were judged before
        pairs = [pair for pair in pairs if pair[0] in involving or pair[1] in involving]
    return pairs


def _check_models(models: Sequence[str], *, against_reference: bool) -> list[str]:
    models = list(dict.fromkeys(model.strip() for model in models))
    if any(not model for model in models):
        raise JudgeInputError("a model name is empty")
    if REFERENCE in models:
        raise JudgeInputError(f"{REFERENCE!r} names the accepted reference; ask for it with the reference option")
    if len(models) < 2 and not (against_reference and models):
        raise JudgeInputError("give at least two models, or one model and the reference")
    known = set(ModelOutput.objects.filter(model_name__in=models).values_list("model_name", flat=True).distinct())
    unknown = [model for model in models if model not in known]
    if unknown:
        raise JudgeInputError(f"no outputs stored for model(s): {', '.join(unknown)}")
    return models


def judge_pairs(
    *,
    models: Sequence[str],
    with_reference: bool = False,
    against_reference: bool = False,
    instances: Iterable[Instance] | None = None,
    extractor_model: str | None = None,
    involving: Sequence[str] | None = None,
    llm: LLMRunParams = LLMRunParams(),
) -> JudgeReport:
    """Judge every pair of ``models`` (plus each model against the reference with
    ``against_reference``) on every instance where both sides have an output; with ``involving``,
    only the pairs with at least one of those models on a side.

    ``with_reference`` shows the judge the human-verified reference (the paper's GPT4-ref); then
    only instances with an accepted reference are judged. ``extractor_model`` (default: the judge
    model, ``llm.model``) reads verdicts out of answers without the closing phrase. The requests are
    charged to ``llm.run`` when given (its cap applies), otherwise to a new run capped at
    ``llm.budget_usd``. Raises
    ``LLMNotConfigured`` or ``JudgeInputError`` before anything is written.
    """
    judge_model = llm.model
    judge = configured_model(judge_model, llm.client)
    extractor = configured_model(extractor_model, llm.client) if extractor_model else judge
    models = _check_models(models, against_reference=against_reference)
    report = JudgeReport(judge_model=judge, extractor_model=extractor, with_reference=with_reference)
    step = LLMStep(report=report, purpose=PURPOSE, llm=llm, failure=lambda subject, reason: JudgeFailure(
        subject[0].instance.pk, subject[0].model_a, subject[0].model_b, subject[1], reason))
    involving = _check_involving(involving, models)
    pairs = _pairs(models, with_reference=with_reference, against_reference=against_reference,
                   instances=instances, report=report, involving=involving)
    if not pairs:
        return report

    templates = prompts.ensure_judge_templates()
    user_template = templates[prompts.WITH_REFERENCE if with_reference else prompts.NO_REFERENCE]
    report.prompt_template, report.prompt_version = user_template.name, user_template.version
    step.start(name=f"VisIT-Bench judge ({judge}, {len(pairs)} pairs{', with reference' if with_reference else ''})")
    jobs: list[Job] = []
    for pair in pairs:
        for query, (first, second) in ((1, (pair.text_a, pair.text_b)), (2, (pair.text_b, pair.text_a))):
            system, user = prompts.judge_prompts(captions=list(pair.captions), instruction=pair.instance.instruction,
                                                 response_a=first, response_b=second, reference=pair.reference)
            jobs.append(Job(subject=(pair, query), prompt=user, request=chat_request(
                user, system=system, model=judge_model, purpose=PURPOSE, max_tokens=MAX_TOKENS, temperature=0)))

    answered: dict[tuple[_Pair, int], tuple[str | None, LLMResult]] = {}
    unclear: list[Job] = []
    for job, result in zip(jobs, step.results(jobs)):
        if not result.ok:
            step.fail(job.subject, f"{result.status}: {result.error}")
            continue
        position = parse_verdict(result.text or "")
        answered[job.subject] = (position, result)
        if position is None and (result.text or "").strip():
            unclear.append(Job(subject=job.subject, request=chat_request(
                prompts.extraction_prompt(result.text), model=extractor_model or judge_model,
                purpose=EXTRACTION_PURPOSE, max_tokens=EXTRACTION_MAX_TOKENS, temperature=0)))

    extraction_calls: dict[tuple[_Pair, int], int | None] = {}
    for job, result in zip(unclear, step.results(unclear)):
        if not result.ok:  # the verdict stays unknown, not undecided: the battle waits for a re-run
            step.fail(job.subject, f"verdict extraction {result.status}: {result.error}")
            del answered[job.subject]
            continue
        report.extractions += 1
        position = parse_extracted(result.text or "")
        answered[job.subject] = (position, answered[job.subject][1])
        extraction_calls[job.subject] = result.call_id

    for pair in pairs:
        if (pair, 1) not in answered or (pair, 2) not in answered:
            continue
        verdicts = [verdict_for(answered[(pair, query)][0], query) for query in (1, 2)]
        outcome = BattleOutcome(pair.instance.pk, pair.model_a, pair.model_b, verdicts, battle_winner(verdicts))
        outcome.battle_id = _store_battle(
            pair=pair, outcome=outcome, report=report,
            calls=[answered[(pair, query)][1].call_id for query in (1, 2)],
            extractions=[extraction_calls.get((pair, query)) for query in (1, 2)],
        ).pk
        report.battles.append(outcome)
        report.created += 1
    return step.finish()


def _check_involving(involving: Sequence[str] | None, models: list[str]) -> list[str] | None:
    if not involving:
        return None
    strangers = sorted(set(involving) - set(models))
    if strangers:
        raise JudgeInputError(f"only pairs involving {', '.join(strangers)} were asked for, "
                              "but they are not among the models to judge")
    return list(involving)


def _pairs(models, *, with_reference, against_reference, instances, report, involving=None) -> list[_Pair]:
    """The pairs to judge, instance by instance; counts ``requested`` and records what is skipped."""
    sides = list(models)
    outputs: dict[tuple[int, str], str] = {}
    queryset = ModelOutput.objects.filter(model_name__in=sides)
    if instances is not None:
        queryset = queryset.filter(instance__in=list(instances))
    for instance_id, model, text in queryset.values_list("instance_id", "model_name", "text"):
        outputs[(instance_id, model)] = text
    instance_ids = sorted({instance_id for instance_id, _ in outputs})
    references = dict(AcceptedReference.objects.filter(instance_id__in=instance_ids).values_list("instance_id", "text"))
    pairs = []
    for instance in Instance.objects.select_related("family").filter(pk__in=instance_ids).order_by("pk"):
        for model_a, model_b in _model_pairs(models, against_reference, involving):
            text_a = outputs.get((instance.pk, model_a))
            text_b = references.get(instance.pk) if model_b == REFERENCE else outputs.get((instance.pk, model_b))
            if text_a is None or (text_b is None and model_b != REFERENCE):
                continue  # not a pair on this instance
            report.requested += 1
            reason = None
            if text_b is None:
                reason = "no accepted reference"
            elif with_reference and instance.pk not in references:
                reason = "no accepted reference to show the judge"
            captions = current_instruction_captions(instance) if reason is None else None
            if reason is None and captions is None:
                reason = "no current instruction-conditioned caption for every image"
            if reason is not None:
                report.skipped.append(JudgeFailure(instance.pk, model_a, model_b, 0, reason))
                continue
            pairs.append(_Pair(instance, model_a, model_b, text_a, text_b, tuple(captions),
                               references.get(instance.pk) if with_reference else None))
    return pairs


@transaction.atomic
def _store_battle(*, pair: _Pair, outcome: BattleOutcome, report: JudgeReport, calls, extractions) -> JudgedBattle:
    battle, _ = JudgedBattle.objects.select_for_update().get_or_create(
        instance=pair.instance, model_a=pair.model_a, model_b=pair.model_b, judge_model=report.judge_model,
        with_reference=report.with_reference, prompt_template=report.prompt_template,
        prompt_version=report.prompt_version,
        defaults={"winner": outcome.winner},
    )
    battle.verdict_1, battle.verdict_2 = (verdict or "" for verdict in outcome.verdicts)
    battle.winner = outcome.winner
    battle.extractor_model = report.extractor_model if any(extractions) else ""
    battle.query_call_1_id, battle.query_call_2_id = calls
    battle.extraction_call_1_id, battle.extraction_call_2_id = extractions
    battle.full_clean()
    battle.save()
    judgments_changed_on_commit(project_id=pair.instance.family.project_id)
    return battle
