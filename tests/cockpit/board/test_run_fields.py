"""The model and budget fields a step run asks for are defined once: the board's run form and the
leaderboard's submission settings take them from ``cockpit.forms`` and check them alike."""
import pytest

from cockpit.forms import BudgetField, ConfiguredModelField, RunForm
from cockpit.views.leaderboard import PolicyForm

from .conftest import MODEL

BUDGETS = {"0.000001": True, "2.5": True, "999999.999999": True, "0": False, "-1": False, "1.1234567": False,
           "1e20": False, "abc": False, "": False}


def test_both_forms_use_the_shared_fields():
    assert isinstance(RunForm.base_fields["model"], ConfiguredModelField)
    assert isinstance(PolicyForm.base_fields["judge_model"], ConfiguredModelField)
    assert isinstance(RunForm.base_fields["budget_usd"], BudgetField)
    assert isinstance(PolicyForm.base_fields["budget_usd"], BudgetField)


@pytest.mark.parametrize("budget,accepted", BUDGETS.items())
def test_both_forms_take_the_same_budgets(budget, accepted, llm_settings):
    run = RunForm({"run-model": MODEL, "run-budget_usd": budget}, prefix="run")
    policy = PolicyForm({"judge_model": MODEL, "budget_usd": budget})
    assert (run.is_valid(), policy.is_valid()) == (accepted, accepted), (run.errors, policy.errors)


def test_both_forms_offer_the_configured_models_as_the_settings_stand(llm_settings):
    assert RunForm({"run-model": "cheap-model", "run-budget_usd": "1"}, prefix="run").is_valid()
    assert PolicyForm({"judge_model": "cheap-model", "budget_usd": "1"}).is_valid()
    llm_settings.LLM_PRICES = {MODEL: llm_settings.LLM_PRICES[MODEL]}  # cheap-model no longer configured
    assert [value for value, _ in RunForm().fields["model"].choices] == [MODEL]
    assert [value for value, _ in PolicyForm().fields["judge_model"].choices] == ["", MODEL]
    assert not RunForm({"run-model": "cheap-model", "run-budget_usd": "1"}, prefix="run").is_valid()
    assert not PolicyForm({"judge_model": "cheap-model", "budget_usd": "1"}).is_valid()
    # Only the submission settings leave the model to the default.
    assert PolicyForm({"judge_model": "", "budget_usd": "1"}).is_valid()
    assert not RunForm({"run-model": "", "run-budget_usd": "1"}, prefix="run").is_valid()
