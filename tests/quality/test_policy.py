"""Per-round quality policy: warn after N failed checks, stop after M, and a minimum gold accuracy
for automatic approval (the rest held for review), enforced by the engine and by pay_round."""
import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from annotation.eligibility import failed_checks
from annotation.errors import NotQualified
from annotation.models import Assignment
from annotation.selectors import quality_warning
from annotation.services.engine import request_assignment
from annotation.services.rounds import create_round
from annotation.services.submissions import submit_assignment
from annotation.services.workers import get_or_create_local_worker
from providers import services as provider_services
from providers.review import APPROVE, review_submissions
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker, make_worker_user

from .rounds import side_choice

pytestmark = pytest.mark.django_db


def gold_round(*, gold: int, plain: int, **rules):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(gold + plain)]
    return make_round(task_type="pairwise", targets=pairs, workers_per_item=2,
                      gold_answers={n: {"winner": "a"} for n in range(gold)}, qualification_rules=rules)


def take_and_answer(round, worker, wanted):
    assignment = request_assignment(round=round, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=side_choice(assignment, wanted))
    return assignment


def test_default_policy_warns_after_two_failures_and_stops_after_five():
    round = gold_round(gold=6, plain=2)
    assert round.quality_policy == {"warn_after_failed_checks": 2, "stop_after_failed_checks": 5,
                                    "min_gold_accuracy_for_approval": None}
    user = make_worker_user()
    worker = get_or_create_local_worker(user=user)
    take_and_answer(round, worker, "b")
    assert quality_warning(round=round, worker=worker) == ""
    take_and_answer(round, worker, "b")
    assert "2 of your answers to check questions were wrong" in quality_warning(round=round, worker=worker)
    client = Client()
    client.force_login(user)
    page = client.get(f"/work/rounds/{round.pk}/").content.decode()
    assert "after 5 wrong answers this round gives you no more tasks" in page
    api = client.post(f"/api/work/rounds/{round.pk}/next/", content_type="application/json").json()
    assert "2 of your answers" in api["warning"]
    for _ in range(3):
        take_and_answer(round, worker, "b")
    assert failed_checks(round=round, worker=worker) == 5
    with pytest.raises(NotQualified, match="no more tasks for you"):
        request_assignment(round=round, worker=worker)
    refused = client.post(f"/api/work/rounds/{round.pk}/next/", content_type="application/json")
    assert refused.status_code == 403
    # Another worker who answers the checks right is not affected.
    careful = make_worker()
    for _ in range(6):
        take_and_answer(round, careful, "a")
    assert quality_warning(round=round, worker=careful) == ""
    assert request_assignment(round=round, worker=careful) is not None


def test_a_round_sets_its_own_thresholds_or_turns_them_off():
    strict = gold_round(gold=3, plain=1, warn_after_failed_checks=1, stop_after_failed_checks=1)
    worker = make_worker()
    take_and_answer(strict, worker, "b")
    with pytest.raises(NotQualified):
        request_assignment(round=strict, worker=worker)
    lenient = gold_round(gold=3, plain=1, warn_after_failed_checks=0, stop_after_failed_checks=0)
    for _ in range(3):
        take_and_answer(lenient, worker, "b")
    assert quality_warning(round=lenient, worker=worker) == ""
    assert request_assignment(round=lenient, worker=worker) is not None


@pytest.mark.parametrize("rules, message", [
    ({"stop_after_failed_checks": -1}, "must be a non-negative integer"),
    ({"warn_after_failed_checks": "2"}, "must be a non-negative integer"),
    ({"min_gold_accuracy_for_approval": 1.5}, "from 0 to 1"),
    ({"min_gold_accuracy_for_approval": True}, "from 0 to 1"),
])
def test_bad_policies_are_refused(rules, message):
    with pytest.raises(ValidationError, match=message):
        create_round(name="bad", task_type="pairwise", qualification_rules=rules)


def test_pay_round_approves_only_workers_above_the_minimum_and_holds_the_rest_for_review():
    round = gold_round(gold=2, plain=2, min_gold_accuracy_for_approval=0.75)
    careful, sloppy = make_worker(), make_worker()
    for _ in range(4):
        take_and_answer(round, careful, "a")
    take_and_answer(round, sloppy, "a")
    for _ in range(3):
        take_and_answer(round, sloppy, "b")  # one of two gold checks passed: 50 % < 75 %
    report = provider_services.pay_round(round=round)
    assert report.approved == 4 and report.held_for_review == 4
    statuses = dict(Assignment.objects.filter(round=round).values_list("worker", "review_status").distinct())
    assert statuses == {careful.pk: "approved", sloppy.pk: "submitted"}
    # A researcher then decides through the one review path.
    held = Assignment.objects.filter(round=round, worker=sloppy)
    assert len(review_submissions(assignments=held, decision=APPROVE).done) == 4
    assert provider_services.pay_round(round=round).held_for_review == 0


def test_a_simulated_worker_stopped_by_the_policy_stops_taking_tasks():
    import random

    from providers.local.rehearsal import simulate_local_worker

    round = gold_round(gold=10, plain=0, stop_after_failed_checks=3)
    done = simulate_local_worker(round=round, username="sim-careless", rng=random.Random(4), accuracy=0.0,
                                 median_seconds=20)
    assert done == 3 and Assignment.objects.filter(round=round, gold_passed=False).count() == 3
