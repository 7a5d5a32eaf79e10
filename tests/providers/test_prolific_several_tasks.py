"""Several tasks per Prolific participant in one study session (``tasks_per_participant``), against the
local Prolific fake: the next task in the same session, the completion code after the last, the extra
tasks paid once as bonuses, and a limit no replay can pass."""
from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Assignment, CollectionRound
from providers.models import BonusPayment, Publication
from providers.registry import get_provider
from providers.services import EXTRA_TASK_REASON, committed_spend, estimate_cost

pytestmark = pytest.mark.django_db


def do_task(client: Client, url: str):
    """Open the page at ``url``, save one answer; (assignment id, token, submit action, the save's answer)."""
    page = client.get(url)
    assert page.status_code == 200, page.content
    html = page.content.decode()
    assert "complete?cc=" not in html
    token = re.search(r'data-task-token="([^"]+)"', html).group(1)
    action = re.search(r'<form id="task-form"[^>]*action="([^"]+)"', html, re.S).group(1)
    saved = client.post(action, {"choice": "left"}, content_type="application/json", HTTP_X_TASK_TOKEN=token)
    assert saved.status_code == 201, saved.content
    return token, action, saved.json()


def publish(round):
    call_command("publish_round", str(round.pk), "--provider", "prolific")
    return Publication.objects.get(round=round, provider="prolific")


def test_three_tasks_in_one_session_then_the_code_and_two_bonuses_paid_once(prolific_fake, round_factory):
    round = round_factory(items=4, workers_per_item=1, reward="1.50",
                          qualification_rules={"tasks_per_participant": 3})
    publication = publish(round)
    started = prolific_fake.start_submission(publication.external_id)
    link = urlsplit(started["study_url"])
    url, client = f"{link.path}?{link.query}", Client()
    for number in (1, 2):
        _token, _action, body = do_task(client, url)
        assert body["next_task"] is True and "cc=" not in body["redirect_url"]
        nxt = urlsplit(body["redirect_url"])
        assert nxt.path == link.path and f"SESSION_ID={started['id']}" in nxt.query
        url = body["redirect_url"]
    _token, _action, body = do_task(client, url)
    code = re.search(r"cc=([A-Z0-9]+)$", body["redirect_url"]).group(1)
    assert code == publication.details["completion_code"] and "next_task" not in body
    # Back at the entry page after the last task: sent on with the code, no fourth task.
    assert client.get(url).status_code == 302
    session = Assignment.objects.filter(round=round, provider_assignment_id=started["id"])
    assert session.count() == 3 and set(session.values_list("status", flat=True)) == {"submitted"}
    prolific_fake.complete_submission(started["id"], code=code, time_taken=600)

    call_command("pay_round", str(round.pk))
    call_command("pay_round", str(round.pk))
    extra = BonusPayment.objects.filter(assignment__round=round)
    assert extra.count() == 2 and set(extra.values_list("reason", flat=True)) == {EXTRA_TASK_REASON}
    assert set(extra.values_list("amount", flat=True)) == {Decimal("1.50")}
    assert first_task_has_no_bonus(session)
    prolific_fake.advance_time(prolific_fake.bonus_settle_seconds + 1)
    call_command("pay_round", str(round.pk))
    call_command("pay_round", str(round.pk))
    assert BonusPayment.objects.filter(assignment__round=round, status="paid").count() == 2
    assert prolific_fake.total_bonus_paid(started["participant_id"]) == 2 * 150
    assert len(prolific_fake.calls("POST /api/v1/bulk-bonus-payments/{id}/pay/")) == 2


def first_task_has_no_bonus(session) -> bool:
    first = session.order_by("pk").first()
    return not BonusPayment.objects.filter(assignment=first).exists()


def test_limit_one_keeps_one_task_and_the_code(prolific_fake, round_factory):
    round = round_factory(items=3, workers_per_item=1)
    publication = publish(round)
    started = prolific_fake.start_submission(publication.external_id)
    link = urlsplit(started["study_url"])
    client = Client()
    _token, _action, body = do_task(client, f"{link.path}?{link.query}")
    assert "cc=" in body["redirect_url"] and "next_task" not in body
    again = client.get(f"{link.path}?{link.query}")
    assert again.status_code == 302 and "cc=" in again["Location"]
    assert Assignment.objects.filter(round=round).count() == 1


def test_replaying_the_submit_never_passes_the_limit(prolific_fake, round_factory):
    round = round_factory(items=4, workers_per_item=1, qualification_rules={"tasks_per_participant": 2})
    publication = publish(round)
    started = prolific_fake.start_submission(publication.external_id)
    link = urlsplit(started["study_url"])
    client = Client()
    _token, _action, body = do_task(client, f"{link.path}?{link.query}")
    token, action, body = do_task(client, body["redirect_url"])
    assert "cc=" in body["redirect_url"]
    for _ in range(3):
        replay = client.post(action, {"choice": "left"}, content_type="application/json", HTTP_X_TASK_TOKEN=token)
        assert replay.status_code == 200 and "cc=" in replay.json()["redirect_url"]
        assert client.get(f"{link.path}?{link.query}").status_code == 302
    assert Assignment.objects.filter(round=round, worker__external_id=started["participant_id"]).count() == 2


def test_the_estimate_pays_extra_tasks_as_bonuses(round_factory, settings):
    round = round_factory(items=6, workers_per_item=1, reward="1.00",
                          qualification_rules={"tasks_per_participant": 3})
    estimate = estimate_cost(round=round, provider=get_provider("prolific"), expected_seconds=1)
    assert estimate.tasks == 6 and estimate.rewards == Decimal("2.00")
    assert estimate.expected_bonuses == Decimal("4.00") and estimate.bonus_fees > 0


def test_the_rule_must_be_a_positive_integer():
    from django.core.exceptions import ValidationError

    from annotation.models import validate_qualification_rules

    validate_qualification_rules({"tasks_per_participant": 2})
    for bad in (0, -1, "3", True):
        with pytest.raises(ValidationError):
            validate_qualification_rules({"tasks_per_participant": bad})


def test_extra_task_bonuses_stay_within_the_budget_cap(prolific_fake, round_factory):
    round = round_factory(items=3, workers_per_item=1, reward="1.00", budget_cap="10.00",
                          qualification_rules={"tasks_per_participant": 3})
    publication = publish(round)
    started = prolific_fake.start_submission(publication.external_id)
    link = urlsplit(started["study_url"])
    client, url = Client(), f"{link.path}?{link.query}"
    for _ in range(3):
        _token, _action, body = do_task(client, url)
        url = body["redirect_url"]
    code = re.search(r"cc=([A-Z0-9]+)$", url).group(1)
    prolific_fake.complete_submission(started["id"], code=code, time_taken=600)
    spent = committed_spend(round=round)
    # The cap leaves room for the work done and nothing more: a bonus replacing a reward slot fits.
    CollectionRound.objects.filter(pk=round.pk).update(budget_cap=spent)
    call_command("pay_round", str(round.pk))
    assert BonusPayment.objects.filter(assignment__round=round).count() == 2
    assert committed_spend(round=round) == spent
    # A cap below what was committed grants nothing more (and the ledger keeps what it has).
    CollectionRound.objects.filter(pk=round.pk).update(budget_cap=spent - Decimal("1.00"))
    BonusPayment.objects.filter(assignment__round=round).order_by("pk").last().delete()
    call_command("pay_round", str(round.pk))
    assert BonusPayment.objects.filter(assignment__round=round).count() == 1
