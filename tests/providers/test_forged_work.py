"""Forged or unconfirmed provider work counts for nothing until the provider confirms it: not in the
facts about a worker (failed check questions, qualifying answers, gold accuracy), not as a held slot
beyond a short bounded time, and a forged Prolific submission gets no completion code (#26)."""
from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotation.eligibility import failed_checks, qualifying_result, read_round_for_worker
from annotation.models import Assignment, Qualification
from annotation.selectors import approval_split, eligible_workers, work_list_for_worker
from annotation.services.confirmation import record_confirmation
from annotation.services.engine import expire_stale_assignments, request_assignment
from annotation.services.submissions import submit_assignment
from projects.services import create_project
from providers import services
from providers.models import Publication
from providers.prolific.provider import ProlificProvider
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker
from tests.quality.rounds import side_choice

pytestmark = pytest.mark.django_db


def pairs(n: int) -> list[tuple]:
    return [tuple(make_outputs(instance=make_instance())) for _ in range(n)]


def publish_on_prolific(round) -> str:
    services.publish_round(round=round, provider_name="prolific", provider=ProlificProvider(retry_pause=0))
    return Publication.objects.get(round=round, provider="prolific").external_id


def started(fake, study_id: str, participant: str | None = None) -> tuple[str, str]:
    """A participant opens the study on Prolific: (PROLIFIC_PID, SESSION_ID)."""
    submission = fake.start_submission(study_id, participant_id=participant)
    query = dict(part.split("=", 1) for part in urlsplit(submission["study_url"]).query.split("&"))
    return query["PROLIFIC_PID"], query["SESSION_ID"]


def entry(round, participant: str, study: str, session: str):
    return Client().get(f"/work/prolific/{round.pk}/?PROLIFIC_PID={participant}&STUDY_ID={study}&SESSION_ID={session}")


def answer_on_page(page, wanted: str):
    """Save the pairwise answer ``wanted`` on a task page; (the assignment, the save's response)."""
    html = page.content.decode()
    token = re.search(r'data-task-token="([^"]+)"', html).group(1)
    action = re.search(r'<form id="task-form"[^>]*action="([^"]+)"', html, re.S).group(1)
    assignment = Assignment.objects.get(pk=int(re.search(r"/assignments/(\d+)/", action).group(1)))
    saved = Client().post(action, side_choice(assignment, wanted), content_type="application/json",
                          HTTP_X_TASK_TOKEN=token)
    return assignment, saved


def forge(round, *, participant: str, study: str, session: str, wanted: str):
    """One forged entry: the study link with a made-up SESSION_ID, answered if a task is given."""
    page = entry(round, participant, study, session)
    if page.status_code != 200 or b"task-form" not in page.content:
        return page, None
    return page, answer_on_page(page, wanted)[1]


def test_forged_prolific_entries_with_a_real_participants_id_do_not_lock_them_out(prolific_fake):
    round = make_round(task_type="pairwise", targets=pairs(8), workers_per_item=2,
                       gold_answers={n: {"winner": "a"} for n in range(6)})
    assert round.quality_policy["stop_after_failed_checks"] == 5
    study = publish_on_prolific(round)
    participant, session = started(prolific_fake, study)
    # Someone who knows the participant's id answers five check questions wrong under made-up sessions.
    for n in range(5):
        forge(round, participant=participant, study=study, session=f"FORGED{n}", wanted="b")
    worker = services.get_or_create_provider_worker(provider="prolific", external_id=participant)
    assert failed_checks(round=round, worker=worker) == 0
    page = entry(round, participant, study, session)
    assert page.status_code == 200, page.content.decode()
    assert b"task-form" in page.content and b"Too many of your answers" not in page.content


def test_forged_entries_do_not_earn_a_qualification(prolific_fake):
    owner = User.objects.create_user("owner")
    project = create_project(name="Qualified", slug="qualified", owner=owner)
    practice = make_round(task_type="pairwise", targets=pairs(3), workers_per_item=20, project=project,
                          gold_answers={n: {"winner": "a"} for n in range(3)},
                          qualification_rules={"qualifies_for_project": 0.66, "stop_after_failed_checks": 0,
                                               "tasks_per_participant": 3})
    real = make_round(task_type="pairwise", targets=pairs(2), workers_per_item=5, project=project,
                      qualification_rules={"qualified_only": True})
    practice_study, real_study = publish_on_prolific(practice), publish_on_prolific(real)
    # A participant id that never started the qualifying study answers all its checks right.
    for n in range(3):
        forge(practice, participant="NEVERSTARTED", study=practice_study, session=f"FORGED{n}", wanted="a")
    assert not Qualification.objects.filter(worker__external_id="NEVERSTARTED").exists()
    # It gets no work in the qualified-only study either, even with a session Prolific knows.
    _participant, session = started(prolific_fake, real_study, participant="NEVERSTARTED")
    page = entry(real, "NEVERSTARTED", real_study, session)
    assert page.status_code == 403 and b"task-form" not in page.content

    # An honest participant who passes it is qualified once Prolific confirms their answers.
    participant, session = started(prolific_fake, practice_study)
    for _ in range(3):
        _assignment, saved = answer_on_page(entry(practice, participant, practice_study, session), "a")
        assert saved.status_code == 201
    assert Qualification.objects.filter(worker__external_id=participant, project=project).exists()


def test_forged_work_is_in_no_reader_of_worker_facts():
    """Every reader of facts about a worker ignores forged and not-yet-confirmed submissions."""
    practice = make_round(task_type="pairwise", targets=pairs(3), workers_per_item=5,
                          gold_answers={n: {"winner": "a"} for n in range(3)},
                          qualification_rules={"qualifies_for_project": 0.66, "stop_after_failed_checks": 2,
                                               "min_gold_accuracy_for_approval": 1.0})
    wrong = services.get_or_create_provider_worker(provider="prolific", external_id="VICTIM")
    right = services.get_or_create_provider_worker(provider="prolific", external_id="NOBODY")
    for worker, wanted, state in ((wrong, "b", "forged"), (right, "a", "unconfirmed")):
        for n in range(2):
            assignment = request_assignment(round=practice, worker=worker, provider_assignment_id=f"S{n}")
            submit_assignment(assignment_id=assignment.pk, worker=worker, data=side_choice(assignment, wanted))
            if state == "forged":
                record_confirmation(assignment=assignment, confirmation=state)
    assert failed_checks(round=practice, worker=wrong) == 0
    assert read_round_for_worker(round_id=practice.pk, worker=wrong).worker_facts.failed_checks == 0
    assert [offer.round.pk for offer in work_list_for_worker(worker=wrong)] == [practice.pk]
    assert wrong.pk in {worker.pk for worker in eligible_workers(round=practice)}  # the stuck-items panel's count
    assert qualifying_result(round=practice, worker=right)["answers"] == 0
    # Gold accuracy for approval: nobody's confirmed gold answers, so nobody is approved automatically.
    local = make_worker()
    done = request_assignment(round=practice, worker=local)
    submit_assignment(assignment_id=done.pk, worker=local, data=side_choice(done, "a"))
    approvable, _held = approval_split(round=practice, assignments=Assignment.objects.submitted())
    assert set(approvable.values_list("worker", flat=True)) == {local.pk}


def test_a_forged_prolific_submission_gets_no_completion_code(prolific_fake):
    round = make_round(task_type="pairwise", targets=pairs(2), workers_per_item=2)
    study = publish_on_prolific(round)
    code = Publication.objects.get(round=round).details["completion_code"]
    # A made-up session with the real study id: neither the save's answer nor the entry page gives the code.
    page, saved = forge(round, participant="MADEUP", study=study, session="FORGEDSESSION", wanted="a")
    assert code not in page.content.decode()
    if saved is not None:
        assert code not in saved.content.decode() and "redirect_url" not in saved.json()
        assert "no completion code" in saved.json()["message"]
    again = entry(round, "MADEUP", study, "FORGEDSESSION")
    assert code not in again.content.decode() and code not in again.get("Location", "")
    # An honest participant gets it.
    participant, session = started(prolific_fake, study)
    _assignment, saved = answer_on_page(entry(round, participant, study, session), "a")
    assert saved.json()["redirect_url"].endswith(f"cc={code}")
    assert entry(round, participant, study, session)["Location"].endswith(f"cc={code}")


def test_made_up_prolific_session_ids_hold_no_slot(prolific_fake):
    round = make_round(task_type="pairwise", targets=pairs(12), workers_per_item=3)
    study = publish_on_prolific(round)
    # 36 visits of the public study link with made-up participants and sessions: one per slot.
    for n in range(36):
        assert entry(round, f"MADEUP{n}", study, f"MADEUPSESSION{n}").status_code == 403
    assert not Assignment.objects.exists()
    participant, session = started(prolific_fake, study)
    page = entry(round, participant, study, session)
    assert page.status_code == 200 and b"task-form" in page.content
    held = Assignment.objects.get()
    assert (held.expires_at - held.accepted_at).total_seconds() == round.time_limit_seconds


def test_arrivals_prolific_cannot_vouch_for_are_held_briefly_and_few_at_once(prolific_fake, settings):
    settings.UNCONFIRMED_HOLD_SECONDS, settings.UNCONFIRMED_HOLD_LIMIT = 120, 3
    round = make_round(task_type="pairwise", targets=pairs(12), workers_per_item=3)
    study = publish_on_prolific(round)
    # Prolific cannot be reached while 36 made-up sessions arrive.
    prolific_fake.fail_next(count=36 * settings.PROLIFIC_MAX_ATTEMPTS, operation="GET /api/v1/submissions/{id}/")
    pages = [entry(round, f"MADEUP{n}", study, f"MADEUPSESSION{n}") for n in range(36)]
    assert sum(b"task-form" in page.content for page in pages) == 3
    held = Assignment.objects.holding_a_slot()
    assert held.count() == 3
    assert all((a.expires_at - a.accepted_at).total_seconds() == 120 for a in held)
    # A genuine participant Prolific vouches for is not held back by the cap.
    participant, session = started(prolific_fake, study)
    assert b"task-form" in entry(round, participant, study, session).content


def test_made_up_mturk_assignment_ids_hold_no_slot(mturk_fake, settings):
    from providers.mturk.models import HIT
    from providers.mturk.provider import MTurkProvider

    round = make_round(task_type="pairwise", targets=pairs(12), workers_per_item=3)
    services.publish_round(round=round, provider_name="mturk", provider=MTurkProvider(retry_pause=0))
    hits = list(HIT.objects.order_by("pk"))

    def visit(hit_id: str, assignment_id: str, worker_id: str):
        return Client().get(f"/work/mturk/{round.pk}/?assignmentId={assignment_id}&hitId={hit_id}"
                            f"&workerId={worker_id}&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")

    # 36 made-up assignment and worker ids on the real HITs, three per HIT: nobody accepted them at
    # MTurk, so MTurk vouches for none; a few are held briefly, the rest get nothing.
    for n in range(36):
        visit(hits[n // 3].hit_id, f"3MADEUP{n}", f"AMADEUP{n}")
    held = Assignment.objects.holding_a_slot()
    assert held.count() == settings.UNCONFIRMED_HOLD_LIMIT
    assert all((a.expires_at - a.accepted_at).total_seconds() == settings.UNCONFIRMED_HOLD_SECONDS for a in held)
    # A worker who really accepted a HIT gets it, held for the round's time limit.
    worker_id = "AGENUINE1"
    assignment_id = mturk_fake.accept_assignment(hits[-1].hit_id, worker_id=worker_id)
    page = visit(hits[-1].hit_id, assignment_id, worker_id)
    assert page.status_code == 200 and b"task-form" in page.content
    mine = Assignment.objects.get(provider_assignment_id=assignment_id)
    assert (mine.expires_at - mine.accepted_at).total_seconds() == round.time_limit_seconds
    # The brief holds end by themselves: the engine's expiry frees them after UNCONFIRMED_HOLD_SECONDS.
    later = timezone.now() + timedelta(seconds=settings.UNCONFIRMED_HOLD_SECONDS + 1)
    expire_stale_assignments(round=round, now=later)
    assert list(Assignment.objects.holding_a_slot().values_list("pk", flat=True)) == [mine.pk]
