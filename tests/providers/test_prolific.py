"""Prolific through httpx against the fake: study, sync, review, two-step bonuses with a ledger."""
from __future__ import annotations

import random
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from providers import services
from providers.base import ProviderError, ProviderRefused
from providers.dry_run import simulate_prolific_participant
from providers.models import BonusPayment, Publication
from providers.prolific import ProlificProvider, completion_code

pytestmark = pytest.mark.django_db

PAY = "POST /api/v1/bulk-bonus-payments/{id}/pay/"
LONG_REASON = ("Your ranking put every review in the order shown, and both attention checks were failed, so this "
               "submission cannot be used for the study.")


def provider():
    return ProlificProvider(retry_pause=0)


def publish(round):
    return services.publish_round(round=round, provider_name="prolific", provider=provider())


def participate(fake, round, count, median_seconds=60):
    study_id = Publication.objects.get(round=round, provider="prolific").external_id
    rng = random.Random(4)
    return sum(
        simulate_prolific_participant(fake=fake, round=round, study_id=study_id, participant_id=f"{n:024x}",
                                      rng=rng, accuracy=1.0, median_seconds=median_seconds)
        for n in range(1, count + 1)
    )


def test_publish_creates_and_publishes_one_study_with_the_url_placeholders(prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=2, reward="1.50")
    publish(round)
    publish(round)
    created = prolific_fake.calls("POST /api/v1/studies/")
    assert len(created) == 1
    body = created[0].params["body"]
    assert body["external_study_url"] == (
        f"https://crowdbench.example.org/work/prolific/{round.pk}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert body["reward"] == 150 and body["total_available_places"] == 4
    assert body["completion_codes"][0]["code"] == completion_code(round)
    publication = Publication.objects.get(round=round)
    study = provider()._request("GET", f"studies/{publication.external_id}/")
    assert study["status"] == "ACTIVE"


def test_lost_study_creation_answer_is_found_again_not_duplicated(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    prolific_fake.fail_next(operation="POST /api/v1/studies/", after_processing=True)
    with pytest.raises(ProviderError):
        publish(round)
    publish(round)
    studies = provider()._request("GET", "studies/")["results"]
    assert len(studies) == 1 and studies[0]["status"] == "ACTIVE"
    assert Publication.objects.get().external_id == studies[0]["id"]


def test_sync_links_submissions_by_submission_id_and_reports_strangers(prolific_fake, round_factory):
    round = round_factory(items=3, workers_per_item=1, reward="1.50")
    publish(round)
    assert participate(prolific_fake, round, 2) == 2
    # A participant who entered the completion code without ever reaching our page.
    stranger = prolific_fake.simulate_participant(Publication.objects.get().external_id, participant_id="f" * 24)
    prolific_fake.fail_next(count=2, operation="GET /api/v1/studies/{id}/submissions/", status=429, retry_after=0)
    paging = ProlificProvider(retry_pause=0, page_size=1)
    report = services.sync_round(round=round, providers={"prolific": paging})
    assert report.linked == 2
    pages = [c for c in prolific_fake.calls("GET /api/v1/studies/{id}/submissions/") if c.status == 200]
    assert len(pages) == 3
    assert [(row["assignment"], row["worker"]) for row in report.unmatched] == [(stranger["id"], "f" * 24)]
    linked = Assignment.objects.filter(round=round).values_list("provider_assignment_id", flat=True)
    assert len(set(linked)) == 2


def test_approve_pays_once_and_reject_needs_a_long_message(prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="1.50")
    publish(round)
    participate(prolific_fake, round, 2)
    first, second = Assignment.objects.filter(round=round).order_by("pk")
    with pytest.raises(ProviderRefused):
        services.reject(assignment=second, feedback="Too fast.", providers={"prolific": provider()})
    services.reject(assignment=second, feedback=LONG_REASON, providers={"prolific": provider()})
    prolific_fake.fail_next(operation="POST /api/v1/submissions/{id}/transition/", after_processing=True)
    report = services.pay_round(round=round, providers={"prolific": provider()})
    assert report.approved == 1
    services.pay_round(round=round, providers={"prolific": provider()})
    assert prolific_fake.total_paid("reward") == 150
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.review_status, second.review_status) == ("approved", "rejected")


@pytest.mark.parametrize("after_processing", [True, False])
def test_bonus_pay_call_is_never_repeated_blindly(prolific_fake, round_factory, after_processing):
    # 1.50 for a 10-minute task is 9.00/h; 18.00/h needs 3.00: 1.50 on top.
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    publish(round)
    participate(prolific_fake, round, 1, median_seconds=600)
    Assignment.objects.update(duration_seconds=600)
    prolific_fake.fail_next(operation=PAY, after_processing=after_processing)
    first = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert first.bonuses_unsettled == 1
    payment = BonusPayment.objects.get()
    assert payment.status == "sending" and payment.provider_record_id
    assert len(prolific_fake.calls(PAY)) == 1  # no automatic retry of a paying call
    second = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert second.bonuses_paid == 1
    third = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert (third.bonuses_granted, third.bonuses_paid) == (0, 0)
    assert prolific_fake.total_bonus_paid() == 150
    assert len(prolific_fake.calls(PAY)) == (1 if after_processing else 2)
    payment.refresh_from_db()
    assert payment.status == "paid" and payment.amount == Decimal("1.50")


def test_workspace_currency_must_be_the_rounds(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, reward="1.50", currency="GBP")
    with pytest.raises(ProviderRefused):
        publish(round)
    assert not prolific_fake.calls("POST /api/v1/studies/")


def test_balance_and_estimate_in_minor_units(prolific_fake, round_factory):
    round = round_factory(items=2, workers_per_item=1, reward="1.50")
    estimate = services.estimate_cost(round=round, provider=provider(), expected_seconds=600)
    assert (estimate.rewards, estimate.fees, estimate.expected_bonuses) == (
        Decimal("3.00"), Decimal("1.00"), Decimal("3.00"))
    prolific_fake.set_balance(399)
    with pytest.raises(services.InsufficientBalance):
        publish(round)
    assert provider().balance() == Decimal("3.99")


def test_expire_stops_the_study(prolific_fake, round_factory, capsys):
    round = round_factory(items=1, workers_per_item=2, reward="1.50")
    call_command("publish_round", str(round.pk), "--provider", "prolific")
    call_command("expire_round", str(round.pk))
    study = provider()._request("GET", f"studies/{Publication.objects.get().external_id}/")
    assert study["status"] in ("AWAITING REVIEW", "COMPLETED")
