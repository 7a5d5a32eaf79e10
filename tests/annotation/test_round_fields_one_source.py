"""A round's limits, defaults and choices are written once, on the model: the cockpit's forms and
the API's serializer take theirs from its fields, so they accept and refuse the same values."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from rest_framework import serializers

from annotation.models import CollectionRound
from api.rounds import RoundCreateSerializer
from cockpit.forms import ExtendRoundForm, RoundSettingsForm

SETTINGS = ["name", "language", "workers_per_item", "reward_per_task", "currency", "target_hourly_wage",
            "time_limit_seconds", "budget_cap", "instructions"]
BOUNDED = ["workers_per_item", "reward_per_task", "target_hourly_wage", "time_limit_seconds", "budget_cap"]


def model_field(name):
    return CollectionRound._meta.get_field(name)


def bound(name, kind):
    values = [v.limit_value for v in model_field(name).validators if isinstance(v, kind)]
    return (max if kind is MinValueValidator else min)(values) if values else None


def step(name):
    field = model_field(name)
    return Decimal(1).scaleb(-field.decimal_places) if hasattr(field, "decimal_places") else 1


def form_accepts(field: forms.Field, value) -> bool:
    try:
        field.clean(str(value))
    except forms.ValidationError:
        return False
    return True


def api_accepts(name, value) -> bool:
    try:
        RoundCreateSerializer().fields[name].run_validation(str(value))
    except serializers.ValidationError:
        return False
    return True


def test_the_known_limits_are_the_models():
    # time_limit_seconds once started at 1 s in the API and at 30 s everywhere else.
    assert bound("time_limit_seconds", MinValueValidator) == 30
    assert model_field("target_hourly_wage").default == Decimal("18.00")


@pytest.mark.parametrize("name", SETTINGS)
def test_the_form_and_the_api_show_the_models_default(name):
    field = model_field(name)
    default = field.get_default() if field.has_default() else None
    assert RoundSettingsForm(task_type="pairwise").fields[name].initial == default
    api_default = RoundCreateSerializer().fields[name].default
    assert (None if api_default is serializers.empty else api_default) == default


@pytest.mark.parametrize("name", BOUNDED)
def test_the_form_the_extend_form_and_the_api_refuse_the_same_values(name):
    low, high = bound(name, MinValueValidator), bound(name, MaxValueValidator)
    form_fields = [RoundSettingsForm(task_type="pairwise").fields[name]]
    if name in ExtendRoundForm.base_fields:
        form_fields.append(ExtendRoundForm().fields[name])
    assert low is not None
    cases = [(low, True), (low - step(name), False)]
    if high is not None:
        cases += [(high, True), (high + step(name), False)]
    for value, accepted in cases:
        assert api_accepts(name, value) is accepted, (name, value)
        for field in form_fields:
            assert form_accepts(field, value) is accepted, (name, value, field)


@pytest.mark.parametrize("name", ["currency", "instructions", "name"])
def test_the_form_and_the_api_keep_the_models_lengths(name):
    too_long = "X" * (model_field(name).max_length + 1)
    assert not form_accepts(RoundSettingsForm(task_type="pairwise").fields[name], too_long)
    assert not api_accepts(name, too_long)
    if name == "currency":
        assert not form_accepts(RoundSettingsForm(task_type="pairwise").fields[name], "US")
        assert not api_accepts(name, "US")


def test_the_form_and_the_api_offer_the_models_languages():
    choices = list(model_field("language").choices)
    assert list(RoundSettingsForm(task_type="pairwise").fields["language"].choices) == choices
    assert list(RoundCreateSerializer().fields["language"].choices.items()) == choices
    assert not form_accepts(RoundSettingsForm(task_type="pairwise").fields["language"], "xx")
    assert not api_accepts("language", "xx")
