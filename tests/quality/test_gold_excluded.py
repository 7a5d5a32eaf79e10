"""Gold / attention items score workers and enter no evaluation data: not the battles behind the
ratings, not the rankings behind the IRR report, not the verification verdicts, not a release."""
import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from annotation.selectors import pairwise_battles, ranking_judgments
from datasets_app.models import Instance, Verification
from evaluation.selectors import human_battles, irr_rankings
from tests.annotation.factories import (
    make_candidate,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker,
)

from .rounds import answer_all, side_choice, simulated

# Database behaviour (aggregation of evaluation data): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


@pytest.fixture
def pairwise_round_with_gold():
    pairs = [tuple(make_outputs(instance=make_instance(), models=("m-good", "m-bad"))) for _ in range(3)]
    # The gold pair is between two other models, so any trace of it in the data would show.
    pairs.append(tuple(make_outputs(instance=make_instance(), models=("gold-a", "gold-b"))))
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=3, gold_answers={3: {"winner": "a"}})
    answer_all(round, [make_worker() for _ in range(3)], lambda worker, assignment: side_choice(assignment, "a"))
    return round


def test_gold_judgments_score_the_worker_but_are_not_battles(pairwise_round_with_gold):
    round = pairwise_round_with_gold
    gold = Assignment.objects.filter(round=round, item__is_gold=True)
    assert gold.count() == 3 and all(assignment.gold_passed for assignment in gold)
    battles = human_battles(round_id=round.pk)
    assert len(battles) == 9
    assert not {"gold-a", "gold-b"} & (set(battles["model_a"]) | set(battles["model_b"]))
    assert not pairwise_battles().is_gold.any()
    # Worker quality reads them on purpose.
    assert pairwise_battles(round, include_gold=True).is_gold.sum() == 3
    # The gold item's aggregate is its score, not a majority winner.
    item = round.items.get(is_gold=True)
    assert item.aggregate_result == {"gold": True, "judgments": 3, "passed": 3}


def test_ratings_from_the_database_leave_gold_out(pairwise_round_with_gold, tmp_path):
    out = tmp_path / "ratings.json"
    call_command("ratings", "--from-db", "--round", str(pairwise_round_with_gold.pk), "--method", "bt",
                 "--json", str(out), stdout=io.StringIO())
    models = {entry["model"] for entry in json.loads(out.read_text())["models"]}
    assert models == {"m-good", "m-bad"}


def test_gold_rankings_are_not_irr_data():
    sets = [make_review_set() for _ in range(3)]
    gold_set = sets[2]
    ranks = {str(review.pk): review.prompt_rank for review in gold_set.reviews.all()}
    round = make_round(task_type="ranking", targets=sets, workers_per_item=2, gold_answers={2: {"ranks": ranks}})
    answer_all(round, [make_worker() for _ in range(2)], simulated())
    rankings = irr_rankings(round=round)
    assert set(rankings["item_id"]) == {sets[0].pk, sets[1].pk}
    assert gold_set.pk in set(ranking_judgments(round, include_gold=True)["item_id"])


def test_irr_report_from_the_database_leaves_gold_out(tmp_path):
    sets = [make_review_set() for _ in range(2)]
    round = make_round(task_type="ranking", targets=sets, workers_per_item=2,
                       gold_answers={1: {"ranks": {str(r.pk): r.prompt_rank for r in sets[1].reviews.all()}}})
    answer_all(round, [make_worker() for _ in range(2)], simulated())
    out = io.StringIO()
    call_command("irr_report", "--from-db", "--round", str(round.pk), stdout=out)
    report = out.getvalue()
    assert "IRR agreement: 1 items, 1 evaluable" in report


def test_a_gold_verification_item_decides_nothing_about_its_instance():
    plain, gold = make_candidate(instance=make_instance()), make_candidate(instance=make_instance())
    round = make_round(task_type="verification", targets=[plain, gold], workers_per_item=2,
                       gold_answers={1: {"outcome": "correct"}})
    answer_all(round, [make_worker() for _ in range(2)],
               lambda worker, assignment: {"outcome": "correct", "harmful": False, "comment": ""})
    plain.instance.refresh_from_db()
    gold.instance.refresh_from_db()
    assert plain.instance.status == Instance.Status.VERIFIED
    assert gold.instance.status == Instance.Status.AWAITING_VERIFICATION
    assert not Verification.objects.filter(candidate=gold, is_aggregate=True).exists()
    assert Verification.objects.filter(candidate=plain, is_aggregate=True).exists()
    assert round.items.get(is_gold=True).aggregate_result == {"gold": True, "judgments": 2, "passed": 2}
