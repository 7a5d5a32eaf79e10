"""Answers in a required format: parse each one, follow an unparseable one up once with a
corrective turn, and reject what stays unusable so that it leaves the response cache."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .calls import LLMRequest
from .client import BatchResults, run_batch
from .params import LLMRunParams
from .services import reject_answers

T = TypeVar("T")


@dataclass
class ParsedAnswer(Generic[T]):
    value: T | None = None  # the parsed answer; None when unusable
    text: str = ""  # the last answer received
    problem: str = ""  # why it is unusable
    model: str = ""  # the model that answered, as the server named it
    call_ids: list[int] = field(default_factory=list)


def ask_for_parsed_answers(
    requests: Sequence[LLMRequest],
    *,
    parse: Callable[[int, str], T],
    correction: Callable[[int, str], str],
    reject_reason: str,
    llm: LLMRunParams = LLMRunParams(),
    on_batch: Callable[[BatchResults], object] | None = None,
) -> tuple[list[ParsedAnswer[T]], int]:
    """Ask every chat request; returns the answers in order and how many were followed up.

    ``parse(index, text)`` returns the parsed value or raises ``ValueError`` saying what is wrong;
    ``correction(index, problem)`` writes the user turn that asks again. The follow-up is the same
    conversation plus the answer and the correction: a new request body, so never a cache hit.
    A failed request is not followed up: the LLM layer already retried it, and a re-run asks again.
    The requests are charged to ``llm.run`` (``llm.budget_usd`` is not used: the caller opens the run);
    ``llm.on_requests(n)`` is told how many requests a batch is about to send, for a progress bar;
    ``on_batch(results)`` gets each batch's results (their ``stats`` count what was sent).
    """
    requests = list(requests)
    answers: list[ParsedAnswer[T]] = [ParsedAnswer() for _ in requests]
    _ask(list(range(len(requests))), requests, answers, parse=parse, llm=llm, on_batch=on_batch)
    retry = [index for index, answer in enumerate(answers) if answer.value is None and answer.text]
    for index in retry:
        answer = answers[index]
        requests[index] = dataclasses.replace(requests[index], messages=(
            *requests[index].messages,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": correction(index, answer.problem)},
        ))
    _ask(retry, requests, answers, parse=parse, llm=llm, on_batch=on_batch)
    # Unusable answers leave the response cache, so a re-run asks the model again.
    reject_answers(call_ids=[i for answer in answers if answer.value is None for i in answer.call_ids],
                   reason=reject_reason)
    return answers, len(retry)


def _ask(indexes, requests, answers, *, parse, llm: LLMRunParams, on_batch) -> None:
    if not indexes:
        return
    if llm.on_requests is not None:
        llm.on_requests(len(indexes))
    results = run_batch([requests[index] for index in indexes], run=llm.run, progress=llm.progress, client=llm.client)
    if on_batch is not None:
        on_batch(results)
    for index, result in zip(indexes, results):
        answer = answers[index]
        answer.model = result.model or answer.model
        if not result.ok:
            answer.text, answer.problem = "", f"the request failed ({result.status}): {result.error}"
            continue
        answer.text = result.text or ""
        answer.call_ids.append(result.call_id)
        try:
            answer.value = parse(index, answer.text)
            answer.problem = ""
        except ValueError as exc:
            answer.problem = str(exc)
