"""What the commands of LLM steps share: amount parsing, a progress bar, the not-configured
message, running a step and writing its report."""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from kernel.errors import ServiceError

from .config import LLMNotConfigured
from .params import LLMRunParams
from .steps import StepReport

R = TypeVar("R")


def parse_amount(value: str | None, *, option: str) -> Decimal | None:
    """A non-negative decimal amount given on the command line, or None when not given."""
    if value is None:
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"{option} must be an amount, got {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise CommandError(f"{option} must be a non-negative amount, got {value!r}")
    return amount


BUDGET_DECIMAL_PLACES = 6  # LLMRun.budget_usd


def parse_budget(value: str | None) -> Decimal | None:
    amount = parse_amount(value, option="--budget")
    if amount is not None and amount.as_tuple().exponent < -BUDGET_DECIMAL_PLACES:
        raise CommandError(f"--budget has at most {BUDGET_DECIMAL_PLACES} decimal places, got {value!r}")
    return amount


def not_configured(error: Exception) -> CommandError:
    return CommandError(f"The LLM is not configured: {error}")


@contextmanager
def request_bar(*, verbosity: int, unit: str = "request"):
    """(on_requests, progress) callbacks driving one tqdm bar on stderr, made when the batch starts
    so a setup error prints no empty bar."""
    bars: list[tqdm] = []

    def on_requests(count: int) -> None:
        if not bars:
            bars.append(tqdm(total=0, unit=unit, disable=verbosity == 0, file=sys.stderr))
        bars[0].total += count
        bars[0].refresh()

    def progress(result) -> None:
        bars[0].update()

    try:
        yield on_requests, progress
    finally:
        for bar in bars:
            bar.close()


def run_step(step: Callable[..., R], *, verbosity: int, llm: LLMRunParams, **arguments) -> R:
    """Call an LLM step's service with ``llm`` (the command's model and budget) and a progress bar;
    without an LLM server, a CommandError saying what to set (the service has written nothing)."""
    try:
        with request_bar(verbosity=verbosity) as (on_requests, progress):
            return step(llm=dataclasses.replace(llm, on_requests=on_requests, progress=progress), **arguments)
    except LLMNotConfigured as error:
        raise not_configured(error) from None
    except ServiceError as error:  # a refusal, which has changed nothing
        raise CommandError(error.message) from None


def write_step_report(
    command: BaseCommand, report: StepReport, *, subject: Callable[[object], str], failed: str
) -> None:
    """Skips and failures on stderr (``subject(failure)`` names what it was for), then the
    summary, then a note when the budget stopped the run."""
    for skipped in report.skipped:
        command.stderr.write(f"{subject(skipped)}: skipped: {skipped.reason}")
    for failure in report.failures:
        command.stderr.write(f"{subject(failure)}: {failed}: {failure.reason}")
    style = command.style.SUCCESS if not report.failures else command.style.WARNING
    command.stdout.write(style(report.summary()))
    if report.budget_reached:
        command.stdout.write(command.style.WARNING("The budget was reached; raise --budget and re-run to continue."))
