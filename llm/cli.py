"""What the commands of LLM steps share: amount parsing, a progress bar, the not-configured message."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation

from django.core.management.base import CommandError
from tqdm import tqdm


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


def parse_budget(value: str | None) -> Decimal | None:
    return parse_amount(value, option="--budget")


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
