"""Reads of LLM spending: a run's cost recomputed from its calls is their exact sum."""
from decimal import Decimal

import pytest

from llm.models import LLMCall
from llm.selectors import run_cost_from_calls
from llm.services import create_run

pytestmark = pytest.mark.django_db


def test_run_cost_from_calls_is_the_exact_sum_of_thirty_calls_of_0_0314159_usd():
    # Summed as floats (SQLite), these came back as 0.942477000000001.
    run = create_run(name="thirty calls")
    for number in range(30):
        LLMCall.objects.create(run=run, request_hash=f"{number:064x}", endpoint=LLMCall.Endpoint.CHAT, model="m",
                               request={}, status=LLMCall.Status.OK, cost_usd=Decimal("0.0314159"))
    LLMCall.objects.create(run=run, request_hash="f" * 64, endpoint=LLMCall.Endpoint.CHAT, model="unpriced",
                           request={}, status=LLMCall.Status.FAILED, cost_usd=None)
    total = run_cost_from_calls(run)
    assert total == Decimal("0.942477") and str(total) == "0.94247700"


def test_run_cost_of_a_run_without_calls_is_zero():
    assert run_cost_from_calls(create_run(name="idle")) == 0
