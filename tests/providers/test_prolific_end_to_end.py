"""Prolific end to end against the local fake: publish → the participant's page and submit → sync →
pay with top-ups, through the commands, with the answer of a bonus pay call lost on the way."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Assignment
from providers.models import BonusPayment, Publication

pytestmark = pytest.mark.django_db
PAY = "POST /api/v1/bulk-bonus-payments/{id}/pay/"


def take_part(fake, study_id: str) -> str:
    """A participant follows the study link, does the task on our page and enters the code it gives."""
    started = fake.start_submission(study_id)
    link = urlsplit(started["study_url"])
    page = Client().get(f"{link.path}?{link.query}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "prolific/prolific_task.js" in html and "complete?cc=" not in html  # no code before the save
    token = re.search(r'data-task-token="([^"]+)"', html).group(1)
    action = re.search(r'<form id="task-form"[^>]*action="([^"]+)"', html, re.S).group(1)
    saved = Client().post(action, {"choice": "left"}, content_type="application/json", HTTP_X_TASK_TOKEN=token)
    assert saved.status_code == 201, saved.content
    code = re.search(r"cc=([A-Z0-9]+)$", saved.json()["redirect_url"]).group(1)
    fake.complete_submission(started["id"], code=code, time_taken=600)
    return started["participant_id"]


def test_publish_submit_sync_pay_on_prolific_pays_everyone_once(prolific_fake, round_factory, capsys):
    round = round_factory(items=2, workers_per_item=2, reward="1.50")
    call_command("publish_round", str(round.pk), "--provider", "prolific")
    study_id = Publication.objects.get(round=round, provider="prolific").external_id
    participants = [take_part(prolific_fake, study_id) for _ in range(4)]
    Assignment.objects.filter(round=round).update(duration_seconds=600)  # 9.00/h: a top-up of 1.50 each

    call_command("sync_round", str(round.pk))
    assert Assignment.objects.filter(round=round, status="submitted").count() == 4

    prolific_fake.fail_next(operation=PAY, status=504, after_processing=True)  # one pay answer is lost
    call_command("pay_round", str(round.pk), "--top-up")
    assert prolific_fake.total_paid("reward") == 4 * 150
    assert set(Assignment.objects.filter(round=round).values_list("review_status", flat=True)) == {"approved"}
    assert BonusPayment.objects.filter(status="sending").count() == 4  # accepted or unknown: possibly paid

    call_command("pay_round", str(round.pk), "--top-up")  # at once: nothing settled, nothing sent again
    assert len(prolific_fake.calls(PAY)) == 4 and prolific_fake.total_bonus_paid() == 0

    prolific_fake.advance_time(prolific_fake.bonus_settle_seconds + 1)  # Prolific pays in the following minutes
    capsys.readouterr()
    call_command("pay_round", str(round.pk), "--top-up")
    out = capsys.readouterr().out
    assert "0 approved" in out and "4 paid" in out and "0 awaiting a rerun" in out
    assert BonusPayment.objects.filter(status="paid").count() == 4
    assert len(prolific_fake.calls(PAY)) == 4
    assert [prolific_fake.total_bonus_paid(p) for p in participants] == [150] * 4
    assert prolific_fake.total_paid("reward") == 4 * 150
