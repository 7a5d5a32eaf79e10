"""A round becomes complete by itself when its last item completes, and open again when a rejection
or new items need more work; complete rounds hand out no tasks."""
import threading
from datetime import timedelta

import pytest
from django.db import connection

from annotation.models import Assignment, CollectionRound
from annotation.selectors import work_list_for_worker
from annotation.services.engine import expire_stale_assignments, request_assignment
from annotation.services.review import reject_assignment
from annotation.services.rounds import (add_items, allowed_actions, close_round, create_round, open_round,
                                        pause_round, resume_round)
from annotation.services.submissions import submit_assignment

from .factories import make_candidate, make_round, make_worker

VERIFY_OK = {"outcome": "correct", "harmful": False, "comment": ""}


def verification_round(items=2, **options):
    return make_round(task_type="verification", targets=[make_candidate() for _ in range(items)], **options)


def do_one_task(round, worker=None):
    worker = worker or make_worker()
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK)
    return Assignment.objects.get(pk=assignment.pk)


@pytest.mark.django_db
def test_a_round_whose_items_are_all_complete_becomes_complete_by_itself():
    round = verification_round(items=2, workers_per_item=1)
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.OPEN
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    # A complete round offers nothing: not on the work list, not through "next task".
    newcomer = make_worker()
    assert work_list_for_worker(worker=newcomer) == []
    assert request_assignment(round=round, worker=newcomer) is None
    # Nothing to do with it but close it (or cancel it); it never pauses or extends.
    assert allowed_actions(round) == ["close", "cancel"]
    assert close_round(round=round).status == CollectionRound.Status.CLOSED


@pytest.mark.django_db
def test_a_rejection_that_reopens_an_item_reopens_the_complete_round():
    round = verification_round(items=2, workers_per_item=1)
    first = do_one_task(round)
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    reject_assignment(assignment=first, feedback="Not what was asked.")
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.OPEN
    replacement = do_one_task(round)
    assert replacement.item_id == first.item_id
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE


@pytest.mark.django_db
def test_items_added_to_a_complete_round_reopen_it():
    round = verification_round(items=1, workers_per_item=1)
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    add_items(round=round, targets=[make_candidate()])
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.OPEN
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE


@pytest.mark.django_db
def test_a_paused_round_whose_last_item_completes_stays_paused_and_is_complete_on_resume():
    round = verification_round(items=1, workers_per_item=1)
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    pause_round(round=round)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.PAUSED  # the researcher's pause holds
    assert resume_round(round=round).status == CollectionRound.Status.COMPLETE


@pytest.mark.django_db
def test_work_that_reached_its_provider_in_time_is_still_stored_on_a_complete_round():
    round = verification_round(items=1, workers_per_item=1)
    late = make_worker()
    in_time = request_assignment(round=round, worker=late)
    expire_stale_assignments(round=round, now=in_time.expires_at)  # its slot goes to another worker
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    # A sync stores the work the provider received before the time limit, at the provider's time.
    outcome = submit_assignment(assignment_id=in_time.pk, worker=late, data=VERIFY_OK,
                                         now=in_time.accepted_at + timedelta(seconds=60))
    assert outcome.created


@pytest.mark.django_db
def test_the_next_task_api_offers_nothing_from_a_complete_round(client):
    from django.urls import reverse

    round = verification_round(items=1, workers_per_item=1)
    do_one_task(round)
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE
    worker = make_worker()
    client.force_login(worker.user)
    response = client.post(reverse("annotation-api:next", args=[round.pk]))
    assert response.status_code == 200 and response.json()["assignment"] is None
    page = client.get(reverse("annotation:round", args=[round.pk]))
    assert page.status_code == 200 and "task" not in page.context
    assert not Assignment.objects.filter(worker=worker).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_last_items_completing_at_once_make_the_round_complete_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.fail(f"this concurrency test needs PostgreSQL, not {connection.vendor}: run it with DATABASE_URL")
    items = 8
    round = verification_round(items=items, workers_per_item=1)
    workers = [make_worker(f"last-{n}") for n in range(items)]
    taken = [(worker, request_assignment(round=round, worker=worker)) for worker in workers]
    start = threading.Barrier(items)
    errors: list[BaseException] = []

    def submit(worker, assignment):
        try:
            start.wait()
            submit_assignment(assignment_id=assignment.pk, worker=worker, data=VERIFY_OK)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=pair) for pair in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert not round.items.filter(completed_at__isnull=True).exists()
    round.refresh_from_db()
    assert round.status == CollectionRound.Status.COMPLETE


@pytest.mark.django_db
def test_a_complete_follow_up_round_takes_the_next_items_fed_to_it_and_reopens(settings, tmp_path):
    from tests.annotation.factories import make_family
    from tests.pipeline.builders import caption_instance, submit_all

    settings.MEDIA_ROOT = tmp_path / "media"
    caption_round = create_round(name="Captions", task_type="caption")
    generation = make_round(task_type="instruction_generation", targets=[make_family(), make_family()], open=False)
    generation.follow_up_round = caption_round
    generation.save()
    open_round(round=generation)
    answer = {"license": "CC0-1.0", "creator": "me", "source_url": "https://openverse.org/x"}
    submit_all(round=generation, answers=[
        {**answer, "instruction": "Question one?", "image_url": "https://images.example.org/one.png"}])
    open_round(round=caption_round)
    caption_instance(round=caption_round, captions=["One apple."])
    caption_round.refresh_from_db()
    assert caption_round.status == CollectionRound.Status.COMPLETE
    submit_all(round=generation, answers=[
        {**answer, "instruction": "Question two?", "image_url": "https://images.example.org/two.png"}])
    caption_round.refresh_from_db()
    assert caption_round.items.count() == 2 and caption_round.status == CollectionRound.Status.OPEN
