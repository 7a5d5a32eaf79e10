"""Prolific through httpx against the fake: study, sync, review, two-step bonuses with a ledger."""
from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Assignment
from providers import services
from providers.review import review_submissions
from providers.base import ProviderError, ProviderRefused
from providers.prolific.rehearsal import simulate_prolific_participant
from providers.models import BonusPayment, Publication
from providers.prolific.provider import ProlificProvider, completion_code

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
    refused = review_submissions(assignments=[second], decision="reject", feedback="Too fast.",
                                 providers={"prolific": provider()})
    assert "at least 100 characters" in refused.failed[0][1]
    second.refresh_from_db()
    assert second.review_status == "submitted"
    review_submissions(assignments=[second], decision="reject", feedback=LONG_REASON,
                       providers={"prolific": provider()})
    prolific_fake.fail_next(operation="POST /api/v1/submissions/{id}/transition/", after_processing=True)
    report = services.pay_round(round=round, providers={"prolific": provider()})
    assert report.approved == 1
    services.pay_round(round=round, providers={"prolific": provider()})
    assert prolific_fake.total_paid("reward") == 150
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.review_status, second.review_status) == ("approved", "rejected")


def _round_owing_a_top_up(prolific_fake, round_factory):
    # 1.50 for a 10-minute task is 9.00/h; 18.00/h needs 3.00: 1.50 on top.
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    publish(round)
    participate(prolific_fake, round, 1, median_seconds=600)
    Assignment.objects.update(duration_seconds=600)
    return round


def test_lost_pay_answer_and_immediate_rerun_pay_nobody_twice(prolific_fake, round_factory):
    round = _round_owing_a_top_up(prolific_fake, round_factory)
    prolific_fake.fail_next(operation=PAY, status=504, after_processing=True)
    first = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert first.bonuses_unsettled == 1
    payment = BonusPayment.objects.get()
    assert payment.status == "sending" and payment.provider_record_id and payment.sent_at
    assert len(prolific_fake.calls(PAY)) == 1  # no automatic retry of a paying call
    # Rerun at once: Prolific has not settled the payment yet; it is possibly paid, so nothing is sent.
    second = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert (second.bonuses_granted, second.bonuses_paid, second.bonuses_unsettled) == (0, 0, 1)
    assert len(prolific_fake.calls(PAY)) == 1
    # Minutes later Prolific has paid it; the next rerun sees it and finishes cleanly.
    prolific_fake.advance_time(prolific_fake.bonus_settle_seconds + 1)
    third = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert (third.bonuses_paid, third.bonuses_unsettled, third.errors) == (1, 0, [])
    fourth = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert (fourth.bonuses_granted, fourth.bonuses_paid, fourth.bonuses_unsettled) == (0, 0, 0)
    assert prolific_fake.total_bonus_paid() == 150 and prolific_fake.bonus_payments_settling() == 0
    assert len(prolific_fake.calls(PAY)) == 1
    payment.refresh_from_db()
    assert payment.status == "paid" and payment.amount == Decimal("1.50")


def test_accepted_pay_call_stays_possibly_paid_until_it_settles(prolific_fake, round_factory):
    round = _round_owing_a_top_up(prolific_fake, round_factory)
    first = services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    assert (first.bonuses_paid, first.bonuses_unsettled) == (0, 1)
    assert services.pay_round(round=round, providers={"prolific": provider()}).bonuses_unsettled == 1
    prolific_fake.settle_bonus_payments()
    assert services.pay_round(round=round, providers={"prolific": provider()}).bonuses_paid == 1
    assert prolific_fake.total_bonus_paid() == 150 and len(prolific_fake.calls(PAY)) == 1


def test_pay_call_that_never_settles_stays_possibly_paid_until_a_researcher_resends_it(
        prolific_fake, round_factory, settings):
    round = _round_owing_a_top_up(prolific_fake, round_factory)
    prolific_fake.fail_next(operation=PAY, status=503)  # refused before it took effect, as far as we can tell
    services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    payment = BonusPayment.objects.get()
    # Long after the pay call nothing shows it: still possibly paid, reported with its age, never resent.
    BonusPayment.objects.update(sent_at=timezone.now() - timedelta(seconds=settings.PROLIFIC_BONUS_SETTLE_WINDOW_SECONDS + 5))
    report = services.pay_round(round=round, providers={"prolific": provider()})
    assert report.bonuses_unsettled == 1
    [(payment_id, _worker, amount, age)] = report.awaiting_settlement
    assert payment_id == payment.pk and amount == payment.amount
    assert age >= settings.PROLIFIC_BONUS_SETTLE_WINDOW_SECONDS + 5
    assert len(prolific_fake.calls(PAY)) == 1
    assert BonusPayment.objects.get().status == BonusPayment.Status.SENDING
    # The researcher resolves it explicitly: one more pay call.
    services.resend_unsettled_bonus(payment_id=payment.pk, round=round, providers={"prolific": provider()})
    assert len(prolific_fake.calls(PAY)) == 2
    prolific_fake.settle_bonus_payments()
    assert services.pay_round(round=round, providers={"prolific": provider()}).bonuses_paid == 1
    assert prolific_fake.total_bonus_paid() == 150


def test_resend_of_an_unsettled_bonus_is_refused_inside_the_window_and_for_settled_rows(
        prolific_fake, round_factory, settings):
    round = _round_owing_a_top_up(prolific_fake, round_factory)
    services.pay_round(round=round, top_up=True, providers={"prolific": provider()})
    payment = BonusPayment.objects.get()
    with pytest.raises(services.ResendRefused, match="can be resent only"):
        services.resend_unsettled_bonus(payment_id=payment.pk, round=round, providers={"prolific": provider()})
    with pytest.raises(services.ResendRefused, match="has no bonus"):
        services.resend_unsettled_bonus(payment_id=payment.pk + 99, round=round, providers={"prolific": provider()})
    prolific_fake.settle_bonus_payments()
    services.pay_round(round=round, providers={"prolific": provider()})
    with pytest.raises(services.ResendRefused, match="not awaiting settlement"):
        services.resend_unsettled_bonus(payment_id=payment.pk, round=round, providers={"prolific": provider()})
    assert len(prolific_fake.calls(PAY)) == 1 and prolific_fake.total_bonus_paid() == 150


def test_lost_study_creation_answer_found_on_a_later_page_of_studies(prolific_fake, round_factory):
    client = provider()
    for number in range(45):  # other studies of the workspace push ours past the first pages
        client._request("POST", "studies/", json={
            "name": f"other {number}", "internal_name": f"other-{number}", "description": "Another study.",
            "external_study_url": "https://example.org/?PROLIFIC_PID={{%PROLIFIC_PID%}}",
            "completion_codes": [{"code": f"OTHER{number}", "code_type": "COMPLETED",
                                  "actions": [{"action": "MANUALLY_REVIEW"}]}],
            "total_available_places": 1, "estimated_completion_time": 1, "reward": 100})
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    prolific_fake.fail_next(operation="POST /api/v1/studies/", after_processing=True)
    with pytest.raises(ProviderError):
        services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0,
                                                                                                 page_size=20))
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0,
                                                                                             page_size=20))
    assert len(prolific_fake.calls("POST /api/v1/studies/")) == 46
    assert len(prolific_fake.calls("GET /api/v1/studies/")) >= 3 * 2  # every page, on both attempts
    study = Publication.objects.get(round=round).external_id
    assert client._request("GET", f"studies/{study}/")["status"] == "ACTIVE"


def test_workspace_comes_from_the_workspaces_endpoint_or_configuration(prolific_fake, round_factory, settings):
    assert provider().workspace_id() == prolific_fake.workspace_id
    assert prolific_fake.calls("GET /api/v1/workspaces/") and not prolific_fake.calls("GET /api/v1/users/me/")
    settings.PROLIFIC_WORKSPACE_ID = "f" * 24
    with pytest.raises(ProviderRefused, match="404"):
        provider().balance()
    settings.PROLIFIC_WORKSPACE_ID = prolific_fake.workspace_id
    settings.PROLIFIC_PROJECT_ID = prolific_fake.project_id
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    publish(round)
    assert prolific_fake.calls("POST /api/v1/studies/")[0].params["body"]["project"] == prolific_fake.project_id


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


def test_a_connection_closed_before_the_publish_transition_answers_is_retried_and_publishes_once(
    prolific_fake, round_factory
):
    round = round_factory(items=2, workers_per_item=1, reward="1.50")
    # Prolific publishes the study, then the connection closes before its answer (httpx's
    # RemoteProtocolError); the transition sets a state, so it is sent again.
    prolific_fake.drop_next(operation="POST /api/v1/studies/{id}/transition/")
    publish(round)
    transitions = prolific_fake.calls("POST /api/v1/studies/{id}/transition/")
    assert [call.error for call in transitions] == ["connection closed", "400"]
    assert len(prolific_fake.calls("POST /api/v1/studies/")) == 1
    study = provider()._request("GET", f"studies/{Publication.objects.get().external_id}/")
    assert study["status"] == "ACTIVE"
    assert Publication.objects.get().status == Publication.Status.PUBLISHED


def test_a_connection_closed_before_a_read_answers_is_retried(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    publish(round)
    prolific_fake.drop_next(operation="GET /api/v1/studies/{id}/submissions/")
    assert provider().list_submissions(publication=Publication.objects.get(round=round)) == []
    assert [call.error for call in prolific_fake.calls("GET /api/v1/studies/{id}/submissions/")] == [
        "connection closed", None]


def test_a_pay_call_whose_connection_closes_is_not_sent_again(prolific_fake, round_factory):
    round = round_factory(items=1, workers_per_item=1, reward="1.50")
    publish(round)
    participate(prolific_fake, round, 1)
    services.pay_round(round=round, providers={"prolific": provider()})
    assignment = Assignment.objects.get(round=round)
    payment, _ = services.grant_bonus(assignment=assignment, amount=Decimal("0.40"), reason="Thanks.", purpose="t")
    prolific_fake.drop_next(operation=PAY)
    payment = services.send_bonus(payment=payment, providers={"prolific": provider()})
    assert len(prolific_fake.calls(PAY)) == 1
    assert payment.status == BonusPayment.Status.SENDING


def test_a_refused_prolific_publish_leaves_the_round_as_it_was(prolific_fake, round_factory):
    from annotation.models import CollectionRound

    round = round_factory(items=2, workers_per_item=1, reward="1.50", open=False)  # a USD draft
    prolific_fake.currency_code = "GBP"
    with pytest.raises(ProviderRefused, match="GBP"):
        publish(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.DRAFT and round.opened_at is None
    assert not Publication.objects.exists()
    assert not prolific_fake.calls("POST /api/v1/studies/")
