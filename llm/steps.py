"""The skeleton every LLM step of the pipeline shares: reference candidates, model outputs, IRR
reviews and the pairwise judge.

A step picks its subjects (instances, image/language pairs, battles), says which it skips and
why, builds one request per subject, and stores what comes back. The skeleton does the rest the
same way for all of them: one ``LLMRun`` per call of the step (with the budget cap), one batch
through the LLM layer (cache, concurrency, retries, cost), failures with their reasons, and a
report with what was asked, answered from the cache, spent and how the run ended.

    step = LLMStep(report=report, purpose=PURPOSE, failure=Failure, llm=llm)  # llm: LLMRunParams
    jobs = [job for subject in todo if (job := step.job(subject, lambda: chat_request(...)))]
    step.start(name="…")
    for answer in step.ask(jobs):
        store(answer)
    step.finish()
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, TypeVar

from kernel.wording import counted

from .calls import LLMRequest, LLMResult, RenderedPrompt
from .client import BatchResults, run_batch
from .models import LLMRun
from .params import LLMRunParams
from .services import create_run
from .structured import ask_for_parsed_answers

S = TypeVar("S")

NO_TEXT = "the model answered with no text"


def format_usd(amount: Decimal) -> str:
    """0.00052200 → 0.000522 and 0E-8 → 0: stored amounts carry eight decimal places."""
    return format(Decimal(amount).normalize(), "f")


@dataclass
class StepReport:
    """What one call of an LLM step did. Steps extend it with the ids of what they stored."""

    requested: int = 0
    created: int = 0
    sent: int = 0
    cache_hits: int = 0
    retried: int = 0  # answers followed up once because they did not parse
    skipped: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    run_id: int | None = None
    run_status: str = ""
    spent_usd: Decimal = Decimal(0)

    @property
    def budget_reached(self) -> bool:
        return self.run_status == LLMRun.Status.BUDGET_EXCEEDED

    def requests_summary(self) -> str:
        return (f"{counted(self.sent, 'request')} sent, {self.cache_hits} answered from the cache "
                f"(spent ${format_usd(self.spent_usd)})")


@dataclass
class Job(Generic[S]):
    """One request of a step and the subject its answer is for."""

    subject: S
    request: LLMRequest
    prompt: RenderedPrompt | None = None


@dataclass
class Answer(Generic[S]):
    """A usable answer: the text (and the parsed value for structured answers)."""

    job: Job[S]
    text: str
    model: str
    value: Any = None
    call_ids: list[int] = field(default_factory=list)


class LLMStep(Generic[S]):
    """Runs a step's requests and keeps its report. ``failure(subject, reason)`` makes the
    step's failure record (it names the subject the way the step's users know it). With ``llm.run``,
    the requests are charged to that run (and kept to its cap) instead of one ``start`` opens with
    ``llm.budget_usd``."""

    def __init__(
        self,
        *,
        report: StepReport,
        purpose: str,
        failure: Callable[[S, str], object],
        llm: LLMRunParams = LLMRunParams(),
    ) -> None:
        self.report = report
        self.purpose = purpose
        self.failure = failure
        self.llm = llm
        self.run = llm.run
        if llm.run is not None:  # what the run spent before counts, also when nothing is left to send
            report.run_id, report.spent_usd = llm.run.pk, llm.run.spent_usd
        self._budget_reached = False  # by any batch: a later batch that fits must not hide it

    def skip(self, subject: S, reason: str) -> None:
        self.report.skipped.append(self.failure(subject, reason))

    def fail(self, subject: S, reason: str) -> None:
        self.report.failures.append(self.failure(subject, reason))

    def job(self, subject: S, build: Callable[[], LLMRequest], prompt: RenderedPrompt | None = None) -> Job[S] | None:
        """The subject's job, or None (recorded as a failure) when its images cannot be sent."""
        try:
            return Job(subject=subject, request=build(), prompt=prompt)
        except (FileNotFoundError, ValueError) as exc:  # a stored file gone missing, or not an image
            self.fail(subject, f"cannot send the image: {exc}")
            return None

    def start(self, *, name: str) -> LLMRun:
        """The run every request of this call is charged to (and capped by): the one given, or a new
        one capped at ``llm.budget_usd``."""
        if self.llm.run is not None and self.llm.budget_usd is not None:
            raise ValueError("give the step a run to charge or a budget, not both: the run's cap applies")
        if self.run is None:
            self.run = create_run(name=name, budget_usd=self.llm.budget_usd, purpose=self.purpose)
        self.report.run_id = self.run.pk
        return self.run

    def results(self, jobs: Sequence[Job[S]]) -> list[LLMResult]:
        """Every job's raw result, in order (for steps that look at failures themselves)."""
        if not jobs:
            return []
        if self.llm.on_requests is not None:
            self.llm.on_requests(len(jobs))
        results = run_batch([job.request for job in jobs], run=self.run, progress=self.llm.progress,
                            client=self.llm.client)
        self._count(results)
        return list(results)

    def _count(self, results: BatchResults) -> None:
        self.report.sent += results.stats.sent
        self.report.cache_hits += results.stats.cache_hits
        self._budget_reached |= results.stats.budget_exceeded > 0

    def ask(self, jobs: Sequence[Job[S]]) -> list[Answer[S]]:
        """The usable answers; a failed request or an empty answer is recorded as a failure."""
        answers = []
        for job, result in zip(jobs, self.results(jobs)):
            text = (result.text or "").strip() if result.ok else ""
            if not result.ok:
                self.fail(job.subject, f"{result.status}: {result.error}")
            elif not text:
                self.fail(job.subject, NO_TEXT)
            else:
                answers.append(Answer(job=job, text=text, model=result.model, call_ids=[result.call_id]))
        return answers

    def ask_parsed(
        self,
        jobs: Sequence[Job[S]],
        *,
        parse: Callable[[Job[S], str], Any],
        correction: Callable[[Job[S], str], str],
        reject_reason: str,
    ) -> list[Answer[S]]:
        """Answers in a required format (``llm.structured``): unparseable ones are followed up once,
        what stays unusable is a failure and leaves the response cache."""
        if not jobs:
            return []
        parsed, retried = ask_for_parsed_answers(
            [job.request for job in jobs],
            parse=lambda index, text: parse(jobs[index], text),
            correction=lambda index, problem: correction(jobs[index], problem),
            reject_reason=reject_reason, llm=dataclasses.replace(self.llm, run=self.run), on_batch=self._count,
        )
        self.report.retried += retried
        answers = []
        for job, answer in zip(jobs, parsed):
            if answer.value is None:
                self.fail(job.subject, answer.problem)
                continue
            answers.append(Answer(job=job, text=answer.text, model=answer.model, value=answer.value,
                                  call_ids=list(answer.call_ids)))
        return answers

    def finish(self) -> StepReport:
        """The run's spending and final status, read back (other processes may share the run)."""
        if self.run is not None:
            self.run.refresh_from_db(fields=["spent_usd", "status"])
            self.report.spent_usd, self.report.run_status = self.run.spent_usd, self.run.status
            if self._budget_reached:
                self.report.run_status = LLMRun.Status.BUDGET_EXCEEDED
        return self.report
