"""Workers state their languages; the work list shows only rounds they can still do, with reward,
expected time per task and hourly rate, in a bounded number of queries."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotation import selectors
from annotation.errors import InvalidSubmission, NotQualified
from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.rounds import close_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker, set_worker_languages
from tests.annotation.factories import (
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker,
    make_worker_user,
)

pytestmark = pytest.mark.django_db


def pairwise_round(items: int = 2, **options):
    targets = [tuple(make_outputs(instance=make_instance())) for _ in range(items)]
    return make_round(task_type="pairwise", targets=targets, **options)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def offered(worker) -> list[str]:
    return [offer.round.name for offer in selectors.work_list_for_worker(worker=worker)]


# --- languages -------------------------------------------------------------------------------------


def test_worker_sets_languages_on_the_settings_page():
    user = make_worker_user()
    client = client_for(user)
    page = client.get("/work/settings/")
    assert page.status_code == 200
    assert 'value="ja"' in page.content.decode() and 'value="en"' in page.content.decode()
    response = client.post("/work/settings/", {"languages": ["ja", "en"]})
    assert response.status_code == 302 and response["Location"] == "/work/"
    assert get_or_create_local_worker(user=user).languages == ["en", "ja"]
    # Unticking everything is allowed: no languages stated.
    client.post("/work/settings/", {})
    assert get_or_create_local_worker(user=user).languages == []


def test_the_work_list_names_the_workers_languages_in_the_page_language():
    user = make_worker_user()
    client = client_for(user)
    client.post("/work/settings/", {"languages": ["ja", "en"]})
    page = client.get("/work/").content.decode()
    assert '<span class="language">English</span>, <span class="language">Japanese</span>' in page
    client.post("/work/settings/", {"languages": ["ja", "en"], "page_language": "ja"})
    page = client.get("/work/").content.decode()
    assert '<span class="language">英語</span>, <span class="language">日本語</span>' in page
    assert '<span class="language">en</span>' not in page


def test_unknown_language_is_refused_and_changes_nothing():
    user = make_worker_user()
    worker = set_worker_languages(worker=get_or_create_local_worker(user=user), languages=["en"])
    response = client_for(user).post("/work/settings/", {"languages": ["en", "klingon"]})
    assert response.status_code == 400
    assert "klingon" in response.content.decode()
    worker.refresh_from_db()
    assert worker.languages == ["en"]
    with pytest.raises(InvalidSubmission, match="list of codes"):
        set_worker_languages(worker=worker, languages=["xx"])


def test_settings_page_is_for_logged_in_workers_only():
    assert Client().get("/work/settings/").status_code == 302  # to the login page
    outsider = User.objects.create_user("outsider", password="pw-123456789")
    response = client_for(outsider).post("/work/settings/", {"languages": ["ja"]})
    assert response.status_code == 403
    assert not hasattr(outsider, "crowd_worker")


def test_settings_form_needs_the_csrf_token():
    user = make_worker_user()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/work/settings/", {"languages": ["ja"]}).status_code == 403
    assert get_or_create_local_worker(user=user).languages == []


def test_stated_language_opens_language_matched_rounds():
    round = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja",
                       qualification_rules={"language_matched": True})
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    assert round.name not in offered(worker)
    with pytest.raises(NotQualified):
        request_assignment(round=round, worker=worker)
    client_for(user).post("/work/settings/", {"languages": ["ja"]})
    worker.refresh_from_db()
    assert round.name in offered(worker)
    assert request_assignment(round=round, worker=worker) is not None


# --- the work list ----------------------------------------------------------------------------------


def test_work_list_leaves_out_rounds_the_worker_cannot_do():
    worker, other, third = make_worker(), make_worker(), make_worker()
    doable = pairwise_round()
    closed = pairwise_round()
    close_round(round=closed)
    draft = pairwise_round(open=False)
    japanese = make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="ja",
                          qualification_rules={"language_matched": True})
    other_provider = pairwise_round(qualification_rules={"providers": ["prolific"]})
    experienced = pairwise_round(qualification_rules={"min_approved_tasks": 1})
    full = pairwise_round(items=1, workers_per_item=2)
    for taker in (other, third):
        request_assignment(round=full, worker=taker)
    all_done = pairwise_round(items=1)
    taken = request_assignment(round=all_done, worker=worker)
    submit_assignment(assignment_id=taken.pk, worker=worker, data={"choice": "left"})
    limited = pairwise_round(items=3, workers_per_item=2, qualification_rules={"max_tasks_per_worker": 1})
    mine = request_assignment(round=limited, worker=worker)
    submit_assignment(assignment_id=mine.pk, worker=worker, data={"choice": "left"})
    spent = pairwise_round(items=3, budget_cap=Decimal("0.50"))
    request_assignment(round=spent, worker=other)

    names = offered(worker)
    assert names == [doable.name]
    for excluded in (closed, draft, japanese, other_provider, experienced, full, all_done, limited, spent):
        assert excluded.name not in names
    worker.is_blocked = True
    worker.save()
    assert offered(worker) == []


def test_an_open_task_keeps_its_round_on_the_list_even_when_the_round_is_otherwise_full():
    worker = make_worker()
    round = pairwise_round(items=1)
    request_assignment(round=round, worker=worker)
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert offer.round == round and offer.tasks_left == 1


def test_expected_time_is_the_median_of_submitted_tasks_else_the_estimate_else_the_time_limit():
    worker = make_worker()
    round = pairwise_round(items=4, workers_per_item=2, reward_per_task=Decimal("0.60"), time_limit_seconds=600)
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert (offer.expected_seconds, offer.expected_seconds_source) == (600, "time_limit")
    assert offer.hourly_rate == Decimal("3.60")

    round.estimated_seconds_per_task = 90
    round.save()
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert (offer.expected_seconds, offer.expected_seconds_source, offer.hourly_rate) == (90, "estimate", Decimal("24.00"))

    start = timezone.now() - timedelta(minutes=5)
    times = (30, 60, 200, 45, 90)
    assert len(times) == selectors.MIN_TIMED_TASKS
    for n, seconds in enumerate(times, start=1):
        someone = make_worker()
        assignment = request_assignment(round=round, worker=someone, now=start)
        submit_assignment(assignment_id=assignment.pk, worker=someone, data={"choice": "left"},
                                   now=start + timedelta(seconds=seconds))
        if n < selectors.MIN_TIMED_TASKS:
            # Too few task times: the researcher's estimate still stands.
            [offer] = selectors.work_list_for_worker(worker=worker)
            assert offer.expected_seconds_source == "estimate", n
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert (offer.expected_seconds, offer.expected_seconds_source, offer.hourly_rate) == (60, "median", Decimal("36.00"))


def test_work_list_page_shows_reward_time_and_rate():
    user = make_worker_user()
    round = pairwise_round(reward_per_task=Decimal("0.50"), estimated_seconds_per_task=60)
    html = client_for(user).get("/work/").content.decode()
    assert round.name in html
    assert "0.50 USD per task" in html
    assert "about 1.0 min per task (the researcher" in html and "estimate)" in html
    assert "about 30.00 USD per hour" in html
    close_round(round=round)
    assert "There is no work for you" in client_for(user).get("/work/").content.decode()


def test_work_list_takes_a_fixed_number_of_queries(django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    worker = make_worker()

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            selectors.work_list_for_worker(worker=worker)
        return len(queries)

    pairwise_round(qualification_rules={"min_approved_tasks": 0})
    one = count()
    for _ in range(6):
        pairwise_round(items=3, qualification_rules={"min_approved_tasks": 0, "max_tasks_per_worker": 2})
    assert len(selectors.work_list_for_worker(worker=worker)) == 7
    assert count() == one <= 4


def test_assignments_of_others_do_not_change_the_offer_count():
    worker, other = make_worker(), make_worker()
    round = pairwise_round(items=2, workers_per_item=1)
    assignment = request_assignment(round=round, worker=other)
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert offer.tasks_left == 1
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    # An expired assignment holds no slot.
    [offer] = selectors.work_list_for_worker(worker=worker)
    assert offer.tasks_left == 2
