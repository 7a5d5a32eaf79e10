"""Adaptive overlap: start with k_min workers per item and add workers, up to k_max, only while the
majority at k_max votes is still open; a fixed k stays the default."""
import pytest
from django.core.exceptions import ValidationError

from annotation.eligibility import judgments_needed
from annotation.models import Assignment
from annotation.services.engine import request_assignment
from annotation.services.review import reject_assignment
from annotation.services.rounds import create_round, overlap_savings
from annotation.services.submissions import submit_assignment
from tests.annotation.factories import make_instance, make_outputs, make_review_set, make_round, make_worker

from .rounds import side_choice

pytestmark = pytest.mark.django_db

# Planned votes per item, in the order workers take them: settled at 3 (3-0), at 4 (3-1), at 5 (3-2).
PLANS = ["aaa", "aba" + "a", "abab" + "a"]


def adaptive_round(**options):
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in PLANS]
    return make_round(task_type="pairwise", targets=pairs, workers_per_item=5, **options)


def run(round, workers=7):
    """Workers take items in turn; each answers what the plan says for the item's next vote."""
    given = {}
    pool = [make_worker() for _ in range(workers)]
    progress = True
    while progress:
        progress = False
        for worker in pool:
            assignment = request_assignment(round=round, worker=worker)
            if assignment is None:
                continue
            position = assignment.item.position
            plan = PLANS[position].ljust(5, "a")  # a fixed round asks for all five
            vote = plan[given.get(position, 0)]
            given[position] = given.get(position, 0) + 1
            submit_assignment(assignment_id=assignment.pk, worker=worker, data=side_choice(assignment, vote))
            progress = True
    return {item.position: Assignment.objects.counted().filter(item=item).count() for item in round.items.all()}


def test_items_stop_as_soon_as_the_majority_of_five_is_settled():
    round = adaptive_round(min_workers_per_item=3)
    assert run(round) == {0: 3, 1: 4, 2: 5}
    assert round.items.filter(completed_at__isnull=True).count() == 0
    assert [item.aggregate_result["votes"] for item in round.items.order_by("position")] == [
        {"a": 3, "b": 0}, {"a": 3, "b": 1}, {"a": 3, "b": 2}]
    assert overlap_savings(round=round) == {
        "items_completed": 3, "judgments": 12, "fixed_judgments": 15, "saved": 3, "saved_share": 0.2}


def test_a_fixed_round_keeps_five_per_item():
    round = adaptive_round()
    assert run(round) == {0: 5, 1: 5, 2: 5}
    assert overlap_savings(round=round)["saved"] == 0


def test_only_k_min_slots_are_handed_out_before_any_vote():
    round = adaptive_round(min_workers_per_item=3)
    item = round.items.get(position=0)
    taken = [request_assignment(round=round, worker=make_worker(), item=item) for _ in range(4)]
    assert [assignment is not None for assignment in taken] == [True, True, True, False]
    assert judgments_needed(item=item) == 3


def test_a_rejected_vote_reopens_the_item_for_one_more():
    round = adaptive_round(min_workers_per_item=3)
    run(round)
    item = round.items.get(position=0)
    reject_assignment(assignment=Assignment.objects.filter(item=item).first())
    item.refresh_from_db()
    assert item.completed_at is None and judgments_needed(item=item) == 3
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    assert assignment.item == item
    submit_assignment(assignment_id=assignment.pk, worker=worker, data=side_choice(assignment, "a"))
    item.refresh_from_db()
    assert item.completed_at is not None


def test_rejecting_a_minority_vote_leaves_a_settled_item_complete():
    round = adaptive_round(min_workers_per_item=3)
    run(round)
    item = round.items.get(position=1)  # settled 3-1
    minority = next(a for a in Assignment.objects.filter(item=item) if a.result["winner"] == "b")
    reject_assignment(assignment=minority)
    item.refresh_from_db()
    assert item.completed_at is not None
    assert item.aggregate_result["votes"] == {"a": 3, "b": 0}
    assert request_assignment(round=round, worker=make_worker()) is None


def test_adaptive_overlap_is_checked():
    with pytest.raises(ValidationError, match="at most workers per item"):
        create_round(name="r", task_type="pairwise", workers_per_item=3, min_workers_per_item=4)
    with pytest.raises(ValidationError, match="no single choice"):
        make_round(task_type="ranking", targets=[make_review_set()], workers_per_item=5, min_workers_per_item=3)
