"""Dry runs on each provider's fake with simulated workers, and the local provider."""
from __future__ import annotations

import random
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Assignment, CollectionRound, Worker
from providers import services
from providers.dry_run import rehearse, simulated_answer
from providers.local.rehearsal import simulate_local_worker
from providers.models import BonusPayment, Publication
from providers.mturk.provider import MTurkProvider

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("provider", ["mturk", "prolific", "local"])
def test_dry_run_completes_the_round_and_keeps_nothing(provider, round_factory):
    round = round_factory(items=3, workers_per_item=2, open=False)
    report = rehearse(round=round, provider_name=provider, accuracy=1.0, median_seconds=300, seed=1)
    assert report.tasks_submitted == 6 and report.approved == 6 and report.bonuses_paid == 6
    # 0.50 at ~300 s is ~6/h; the top-up lifts each task to 18/h at the median time.
    assert report.effective_hourly_wage is not None and report.effective_hourly_wage >= Decimal("17.9")
    assert report.rewards == Decimal("3.00") and report.bonuses > 0
    if provider == "mturk":
        # MTurk's fee is 20 % of each payment, rounded half up to the cent: six rewards, six top-ups.
        top_up = report.bonuses / 6
        fee = MTurkProvider(retry_pause=0).reward_fee
        assert report.fees == 6 * fee(reward=Decimal("0.50"), rate=Decimal("0.20")) + 6 * fee(
            reward=top_up, rate=Decimal("0.20"))
    assert report.unmatched == []
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.DRAFT
    assert not Publication.objects.exists() and not Assignment.objects.exists()
    assert not BonusPayment.objects.exists() and not Worker.objects.exclude(provider="local").exists()


def test_dry_run_command_prints_what_would_be_spent(round_factory, capsys):
    round = round_factory(items=2, workers_per_item=1, gold_answers={0: {"winner": "a"}})
    call_command("publish_round", str(round.pk), "--provider", "mturk", "--dry-run", "--seed", "3",
                 "--accuracy", "1.0")
    out = capsys.readouterr().out
    assert "DRY RUN on mturk" in out and "tasks submitted: 2" in out and "gold answers right: 1/1" in out
    assert "would spend: rewards 1.00" in out


def test_simulated_gold_answers_follow_the_accuracy(round_factory):
    # The stop-after-failed-checks policy is off: every one of the 40 answers is wanted here.
    round = round_factory(items=40, workers_per_item=1, gold_answers={i: {"winner": "b"} for i in range(40)},
                          qualification_rules={"stop_after_failed_checks": 0})
    rng = random.Random(9)
    simulate_local_worker(round=round, username="sim", rng=rng, accuracy=0.75, median_seconds=30)
    passed = Assignment.objects.filter(round=round, gold_passed=True).count()
    assert 22 <= passed <= 38  # 30 expected; a wrong simulator gives 0, 20 or 40
    assignment = Assignment.objects.filter(round=round).first()
    assert simulated_answer(assignment=assignment, rng=random.Random(1), accuracy=1.0)["choice"] in ("left", "right")


def test_local_round_publish_pay_and_top_up_once(round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="0.10")
    result = services.publish_round(round=round, provider_name="local")
    assert result.publication.provider == "local" and result.publication.status == "published"
    simulate_local_worker(round=round, username="local-1", rng=random.Random(1), accuracy=1, median_seconds=60)
    Assignment.objects.filter(round=round).update(duration_seconds=60)
    report = services.pay_round(round=round, top_up=True)
    # 18/h for 60 s is 0.30; 0.20 on top of the 0.10 reward.
    assert (report.approved, report.top_up_per_task, report.bonuses_paid) == (2, Decimal("0.20"), 2)
    assert services.pay_round(round=round, top_up=True).bonuses_granted == 0
    assert BonusPayment.objects.filter(status="paid").count() == 2


@pytest.mark.parametrize("key,provider", [("pairwise", "mturk"), ("ranking", "prolific"), ("verification", "local")])
def test_dry_run_of_a_demo_round(key, provider, capsys):
    from demo.rounds import create_demo_rounds

    round = create_demo_rounds()[key]
    tasks = round.items.count() * round.workers_per_item
    # The demo ranking round takes only speakers of its language: on Prolific the study must say so.
    language = ["--first-language-id", "19"] if provider == "prolific" else []
    call_command("publish_round", str(round.pk), "--provider", provider, "--dry-run", "--seed", "2", *language)
    out = capsys.readouterr().out
    assert f"DRY RUN on {provider}" in out and f"tasks submitted: {tasks};" in out
    assert f"approved {tasks};" in out
    assert not Assignment.objects.filter(round=round).exists()


def test_pay_summary_reports_the_wage_before_and_after_top_ups(round_factory, capsys):
    from providers.selectors import pay_summary

    round = round_factory(items=3, workers_per_item=1, reward="0.10", budget_cap=Decimal("5.00"))
    services.publish_round(round=round, provider_name="local")
    simulate_local_worker(round=round, username="wage-1", rng=random.Random(1), accuracy=1, median_seconds=60)
    Assignment.objects.filter(round=round).update(duration_seconds=60)
    before = pay_summary(round=round)
    assert (before["effective_hourly_wage"], before["top_up_due_per_task"]) == (Decimal("6.00"), Decimal("0.20"))
    call_command("pay_round", str(round.pk), "--top-up")
    assert "18.00/h with bonuses (target 18.00)" in capsys.readouterr().out
    after = pay_summary(round=round)
    assert after["effective_hourly_wage_with_bonuses"] == Decimal("18.00")
    assert (after["bonuses_paid"], after["committed_spend"]) == (Decimal("0.60"), Decimal("0.90"))


def test_estimate_cost_command_prints_yen_without_decimal_places():
    from io import StringIO

    from tests.annotation.factories import make_instance, make_outputs, make_round

    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance())) for _ in range(3)],
                       reward_per_task=Decimal("30"), currency="JPY", budget_cap=Decimal("1000"))
    out = StringIO()
    call_command("estimate_cost", str(round.pk), "--provider", "local", stdout=out)
    assert out.getvalue().strip() == ("local: 3 tasks; rewards 90 JPY, fees 0 JPY, expected bonuses 0 JPY "
                                      "(+0 JPY fees); total 90 JPY; budget cap 1000 JPY: within budget")
