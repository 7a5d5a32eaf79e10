"""A gunicorn worker process killed (SIGKILL) while submissions are in flight: the master starts a new
one, clients send again what got no answer, and every acknowledged submission is stored exactly once."""
from __future__ import annotations

import os
import signal

import httpx
import pytest
from django.urls import reverse

from annotation.models import Assignment

from harness.crowd import Crowd, build_round, check_integrity, intact, log_in
from harness.processes import wait_for

from .conftest import PROCESSES, assert_no_server_errors

pytestmark = pytest.mark.postgres

ITEMS, OVERLAP, WORKERS = 40, 2, 8


def test_a_killed_worker_process_loses_no_submission_and_stores_none_twice(test_database_url, gunicorn):
    round, usernames = build_round(items=ITEMS, overlap=OVERLAP, workers=WORKERS)
    server = gunicorn(database_url=test_database_url)
    assert len(server.workers()) == PROCESSES

    crowd = Crowd(server.base_url, usernames, round.pk).start()
    killed = []
    # Kill a worker process until one kill cut requests off mid-flight (the clients saw the connection
    # drop); with 8 clients on 2 processes the first kill almost always does.
    for kill in range(1, 4):
        crowd.wait_for_acknowledged(15 * kill)
        victim = server.workers()[0]
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        wait_for(lambda: len(server.workers()) == PROCESSES and victim not in server.workers(),
                 "the master replacing the killed worker", seconds=60)
        if any(key.startswith(("next ", "submit ", "login")) for key in crowd.report.retried):
            break
    report = crowd.join()

    assert report.retried, "no request was cut off by the kills"
    assert_no_server_errors(report)
    integrity = check_integrity(round_id=round.pk, acknowledged=report.acknowledged, overlap=OVERLAP, items=ITEMS)
    assert intact(integrity), integrity
    assert integrity["stored"] == ITEMS * OVERLAP
    assert not set(killed) & set(server.workers())

    # A submission whose answer was lost is sent again as it was: the stored one is returned (200),
    # nothing new is stored.
    # Any acknowledged one: which workers got tasks depends on the kills' timing, and a worker may end
    # the round with none.
    assignment = Assignment.objects.select_related("worker__user").get(pk=report.acknowledged[0])
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        log_in(client, assignment.worker.user.username)
        response = client.post(reverse("annotation-api:submit", args=[assignment.pk]), json=assignment.payload,
                               headers={"X-CSRFToken": client.cookies["csrftoken"]})
    assert response.status_code == 200 and response.json()["stored"] is False, response.text
    assert check_integrity(round_id=round.pk, acknowledged=report.acknowledged + [assignment.pk], overlap=OVERLAP,
                           items=ITEMS)["stored"] == ITEMS * OVERLAP
