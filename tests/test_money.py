"""Money is an exact Decimal: every money field is a DecimalField, sums of money are exact on every
database, and amounts are shown in their currency's minor unit.

Like the rest of the suite these run on SQLite and, in CI's second pass (``DATABASE_URL`` set), on
PostgreSQL: the database is where sums of money went wrong.
"""
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import models
from django.template import Context, Template

from djangokit.money import MoneySum
from kernel.money import format_money, minor_unit, quantize_money

# Database behaviour (exact decimal sums; SQLite has no decimal type): also run on PostgreSQL.
pytestmark = pytest.mark.database_sensitive

# Words of the names of fields that hold money, in every app ("reward_per_task", "cost_usd").
MONEY_WORDS = {"reward", "rewards", "bonus", "bonuses", "cost", "amount", "spent", "price", "fee", "fees", "budget",
               "wage", "earned", "usd"}


def money_fields():
    for model in apps.get_models():
        if model._meta.app_label in {"admin", "auth", "contenttypes", "sessions", "knox"}:
            continue
        for field in model._meta.get_fields():
            label = f"{model._meta.label}.{field.name}"
            money_name = bool(MONEY_WORDS & set(field.name.split("_")))
            if money_name and getattr(field, "concrete", False) and not field.is_relation:
                yield label, field


def test_every_money_field_is_a_decimal_field():
    found = dict(money_fields())
    # The money the project keeps, so the scan cannot silently find nothing.
    assert {"annotation.CollectionRound.reward_per_task", "annotation.CollectionRound.budget_cap",
            "providers.BonusPayment.amount", "llm.LLMCall.cost_usd", "llm.LLMRun.spent_usd",
            "stepruns.StepRun.cost_usd", "leaderboard.SubmissionPolicy.budget_usd"} <= set(found)
    assert [label for label, field in found.items() if not isinstance(field, models.DecimalField)] == []


@pytest.mark.parametrize(("amount", "currency", "shown"), [
    (Decimal("9.6"), "USD", "9.60"), (Decimal("0.125"), "GBP", "0.13"), (Decimal("30.00"), "JPY", "30"),
    (Decimal("29.50"), "jpy", "30"), (Decimal("1.2345"), "KWD", "1.235"), (Decimal("0E-8"), "USD", "0.00"),
    (7, "EUR", "7.00"),
])
def test_money_is_shown_in_the_currencys_minor_unit(amount, currency, shown):
    assert format_money(amount, currency) == shown
    assert quantize_money(amount, currency) == Decimal(shown)
    assert Template("{{ amount|money:currency }}").render(Context({"amount": amount, "currency": currency})) == shown


def test_a_float_is_not_money():
    with pytest.raises(TypeError, match="float"):
        quantize_money(9.6, "USD")
    assert (minor_unit("USD"), minor_unit("GBP"), minor_unit("JPY")) == (2, 2, 0)


def test_the_money_filter_shows_nothing_for_no_amount():
    assert Template("[{{ amount|money:'USD' }}]").render(Context({"amount": None})) == "[]"


@pytest.mark.django_db
def test_money_sum_refuses_a_column_that_is_not_money():
    from annotation.models import CollectionRound

    with pytest.raises(TypeError, match="DecimalField"):
        CollectionRound.objects.aggregate(total=MoneySum("workers_per_item"))


@pytest.mark.django_db
def test_money_sum_of_no_rows_is_zero_with_the_columns_places():
    from providers.models import BonusPayment

    total = BonusPayment.objects.aggregate(total=MoneySum("amount"))["total"]
    assert total == 0 and str(total) == "0.00"


@pytest.mark.django_db
def test_a_round_paying_fractions_of_a_yen_is_refused_and_nothing_is_saved():
    # Shown in whole yen, a reward of 0.50 JPY would read "1 JPY per task" while 0.50 was paid.
    from django.core.exceptions import ValidationError

    from annotation.models import CollectionRound
    from annotation.services.rounds import create_round

    with pytest.raises(ValidationError) as refused:
        create_round(name="yen", task_type="pairwise", currency="JPY", reward_per_task=Decimal("0.50"),
                              target_hourly_wage=Decimal("1000"), budget_cap=Decimal("100.5"))
    assert set(refused.value.message_dict) == {"reward_per_task", "budget_cap"}
    assert refused.value.message_dict["reward_per_task"] == ["JPY amounts have no decimal places."]
    assert not CollectionRound.objects.exists()
    create_round(name="cents", task_type="pairwise", currency="USD", reward_per_task=Decimal("0.50"))


@pytest.mark.django_db
def test_extending_a_round_to_a_fraction_of_a_yen_is_refused_and_changes_nothing():
    from annotation.errors import InvalidTransition
    from annotation.models import CollectionRound
    from annotation.services.rounds import add_items, create_round, extend_round, open_round

    from tests.annotation.factories import make_instance, make_outputs

    round = create_round(name="yen", task_type="pairwise", currency="JPY", reward_per_task=Decimal("30"),
                                  budget_cap=Decimal("1000"))
    add_items(round=round, targets=[tuple(make_outputs(instance=make_instance()))])
    round = open_round(round=round)
    with pytest.raises(InvalidTransition, match="JPY amounts have no decimal places"):
        extend_round(round=round, budget_cap=Decimal("1000.5"))
    assert CollectionRound.objects.get(pk=round.pk).budget_cap == Decimal("1000.00")
    extend_round(round=round, budget_cap=Decimal("1200"))
    assert CollectionRound.objects.get(pk=round.pk).budget_cap == Decimal("1200.00")
