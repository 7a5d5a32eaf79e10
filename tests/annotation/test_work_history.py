""""My work": a local worker's submitted tasks with review, feedback and earnings; the work list's
notice of new feedback; the site's icon."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotation import selectors
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from annotation.views import WORK_HISTORY_PAGE_SIZE
from providers.models import BonusPayment
from providers.review import APPROVE, REJECT, review_submissions
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker_user

pytestmark = pytest.mark.django_db


def pairwise_round(items: int, **options):
    targets = [tuple(make_outputs(instance=make_instance())) for _ in range(items)]
    return make_round(task_type="pairwise", targets=targets, **options)


def submit(round, worker, *, seconds=40, now=None):
    start = now or timezone.now() - timedelta(minutes=10)
    assignment = request_assignment(round=round, worker=worker, now=start)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"},
                               now=start + timedelta(seconds=seconds))
    assignment.refresh_from_db()
    return assignment


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_history_shows_review_feedback_and_earnings_per_currency():
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    usd = pairwise_round(3, reward_per_task=Decimal("0.50"))
    eur = pairwise_round(1, reward_per_task=Decimal("0.40"), currency="EUR")
    approved, rejected, pending = (submit(usd, worker) for _ in range(3))
    euro = submit(eur, worker)
    review_submissions(assignments=[approved, euro], decision=APPROVE, feedback="Well done.")
    review_submissions(assignments=[rejected], decision=REJECT, feedback="You skipped the second answer.")
    BonusPayment.objects.create(assignment=approved, worker=worker, provider="local", amount=Decimal("0.25"),
                                reason="top-up", token="bonus-1", status=BonusPayment.Status.PAID)
    BonusPayment.objects.create(assignment=approved, worker=worker, provider="local", amount=Decimal("9.00"),
                                reason="not paid yet", token="bonus-2", status=BonusPayment.Status.REQUESTED)

    records = {r.assignment.pk: r for r in selectors.work_records(selectors.work_history(worker=worker))}
    assert (records[approved.pk].review, records[approved.pk].earned, records[approved.pk].bonuses) == (
        "approved", Decimal("0.50"), Decimal("0.25"))
    assert (records[rejected.pk].review, records[rejected.pk].feedback, records[rejected.pk].earned) == (
        "rejected", "You skipped the second answer.", Decimal("0"))
    assert records[pending.pk].review == "pending"
    assert selectors.earnings(worker=worker) == [
        {"currency": "EUR", "approved_tasks": 1, "rewards": Decimal("0.40"), "bonuses": Decimal("0"),
         "total": Decimal("0.40")},
        {"currency": "USD", "approved_tasks": 1, "rewards": Decimal("0.50"), "bonuses": Decimal("0.25"),
         "total": Decimal("0.75")},
    ]

    page = client_for(user).get("/work/history/").content.decode()
    assert "You skipped the second answer." in page and "0.75 USD" in page and "0.40 EUR" in page


def test_history_is_newest_first_and_paged():
    worker_user = make_worker_user()
    worker = get_or_create_local_worker(user=worker_user)
    round = pairwise_round(WORK_HISTORY_PAGE_SIZE + 1)
    start = timezone.now() - timedelta(hours=2)
    made = [submit(round, worker, now=start + timedelta(minutes=n)) for n in range(WORK_HISTORY_PAGE_SIZE + 1)]
    client = client_for(worker_user)
    first = client.get("/work/history/")
    assert [r.assignment.pk for r in first.context["records"]] == [a.pk for a in reversed(made)][:WORK_HISTORY_PAGE_SIZE]
    second = client.get("/work/history/?page=2")
    assert [r.assignment.pk for r in second.context["records"]] == [made[0].pk]
    # A page number out of range or not a number gives a page, never an error.
    assert client.get("/work/history/?page=zzz").status_code == 200
    assert client.get("/work/history/?page=999").context["records"][0].assignment.pk == made[0].pk


def test_worker_text_is_escaped_and_only_their_own_work_is_shown():
    user, other = make_worker_user(), make_worker_user()
    worker = get_or_create_local_worker(user=user)
    someone = get_or_create_local_worker(user=other)
    round = pairwise_round(2)
    mine, theirs = submit(round, worker), submit(round, someone)
    review_submissions(assignments=[mine], decision=REJECT, feedback="<script>alert(1)</script>")
    review_submissions(assignments=[theirs], decision=REJECT, feedback="Meant for someone else.")
    page = client_for(user).get("/work/history/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Meant for someone else." not in page


def test_only_workers_see_my_work():
    assert Client().get("/work/history/").status_code == 302  # to the login page
    researcher = User.objects.create_user("someone", password="pw-123456")
    assert client_for(researcher).get("/work/history/").status_code == 403


def test_work_list_tells_of_new_feedback_until_my_work_is_opened():
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    round = pairwise_round(3)
    first, second = submit(round, worker), submit(round, worker)
    client = client_for(user)
    assert selectors.new_feedback_count(worker=worker) == 0
    review_submissions(assignments=[first], decision=APPROVE)  # no feedback: nothing to read
    assert selectors.new_feedback_count(worker=worker) == 0
    assert 'id="new-feedback"' not in client.get("/work/").content.decode()

    review_submissions(assignments=[second], decision=REJECT, feedback="Too quick.")
    assert selectors.new_feedback_count(worker=worker) == 1
    assert 'id="new-feedback"' in client.get("/work/").content.decode()
    history = client.get("/work/history/")
    assert [r.is_new for r in history.context["records"]] == [True, False]  # newest first: second, first
    worker.refresh_from_db()
    assert worker.work_history_seen_at is not None
    assert selectors.new_feedback_count(worker=worker) == 0
    assert 'id="new-feedback"' not in client.get("/work/").content.decode()
    assert [r.is_new for r in client.get("/work/history/").context["records"]] == [False, False]


def test_header_links_workers_to_my_work():
    user = make_worker_user()
    page = client_for(user).get("/work/").content.decode()
    assert 'id="nav-history"' in page and 'id="history-link"' in page
    other = User.objects.create_user("not-a-worker", password="pw-123456")
    assert 'id="nav-history"' not in client_for(other).get("/").content.decode()


def test_favicon_is_linked_and_served():
    page = Client().get("/").content.decode()
    assert 'rel="icon" href="/static/crowdbench/favicon.svg"' in page
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/crowdbench/favicon.svg"


def approved_tasks(worker, count, **options):
    round = pairwise_round(count, **options)
    done = [submit(round, worker) for _ in range(count)]
    review_submissions(assignments=done, decision=APPROVE)
    return done


def test_my_work_page_shows_the_exact_sum_of_thirty_rewards_of_0_32_usd():
    # SQLite sums decimals as floats: 30 x 0.32 came back as 9.60000000000000 (9.69999999999999 for others).
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    approved_tasks(worker, 30, reward_per_task=Decimal("0.32"))

    [usd] = selectors.earnings(worker=worker)
    assert (usd["rewards"], usd["total"]) == (Decimal("9.60"), Decimal("9.60"))
    assert str(usd["rewards"]) == "9.60"
    page = client_for(user).get("/work/history/").content.decode()
    assert "9.60 USD: 9.60 for 30 approved tasks, 0.00 in bonuses" in page


def test_earnings_add_up_the_bonus_ledger_exactly():
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    done = approved_tasks(worker, 30, reward_per_task=Decimal("0.23"))
    for number, assignment in enumerate(done):
        BonusPayment.objects.create(assignment=assignment, worker=worker, provider="local", amount=Decimal("0.23"),
                                    reason="top-up", token=f"bonus-{number}", status=BonusPayment.Status.PAID)

    [usd] = selectors.earnings(worker=worker)
    assert [str(usd[key]) for key in ("rewards", "bonuses", "total")] == ["6.90", "6.90", "13.80"]
    page = client_for(user).get("/work/history/").content.decode()
    assert "13.80 USD: 6.90 for 30 approved tasks, 6.90 in bonuses" in page


def test_my_work_shows_yen_without_decimal_places():
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    approved_tasks(worker, 3, reward_per_task=Decimal("30"), currency="JPY")
    page = client_for(user).get("/work/history/").content.decode()
    assert "90 JPY: 90 for 3 approved tasks, 0 in bonuses" in page
    assert '<td class="earned">30 JPY</td>' in page
    pairwise_round(2, reward_per_task=Decimal("30"), currency="JPY")  # still open: on the work list
    work_list = client_for(user).get("/work/").content.decode()
    assert "30 JPY per task" in work_list and "at least 60 JPY per hour" in work_list  # 30 JPY per 1800 s
