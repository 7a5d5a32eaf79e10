"""Ratings of the human pairwise judgments collected on the platform."""
import io
import json
import random

import pytest
from django.core.management import CommandError, call_command

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from evaluation.selectors import human_battles
from stats.ratings import compute_ratings
from tests.annotation.factories import make_instance, make_outputs, make_round, make_worker

pytestmark = pytest.mark.django_db

# Planted preference: the better model wins this share of its judgments.
MODELS = ("model-good", "model-mid", "model-bad")


@pytest.fixture
def judged_round():
    instances = [make_instance() for _ in range(4)]
    targets = []
    for instance in instances:
        good, mid, bad = make_outputs(instance=instance, models=MODELS)
        targets += [(good, mid), (mid, bad), (good, bad)]
    round = make_round(task_type="pairwise", targets=targets, workers_per_item=3)
    workers = [make_worker() for _ in range(3)]
    rng = random.Random(7)
    for worker in workers:
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            item = assignment.item
            better_side = "a" if MODELS.index(item.side_a_name) < MODELS.index(item.side_b_name) else "b"
            wanted = better_side if rng.random() < 0.8 else ("b" if better_side == "a" else "a")
            choice = "left" if assignment.presentation["left"] == wanted else "right"
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})
    return round


def test_human_battles_come_from_submitted_judgments_in_order(judged_round):
    battles = human_battles(round_id=judged_round.pk)
    assert len(battles) == 12 * 3
    assert list(battles.columns) == ["model_a", "model_b", "winner", "category"]
    assert set(battles["winner"]) <= {"model_a", "model_b"}
    assert set(battles["model_a"]) | set(battles["model_b"]) == set(MODELS)


def test_ratings_command_from_the_database_matches_the_core(judged_round, tmp_path):
    out = tmp_path / "ratings.json"
    call_command("ratings", "--from-db", "--round", str(judged_round.pk), "--method", "bt",
                 "--json", str(out), stdout=io.StringIO())
    report = json.loads(out.read_text())
    expected = compute_ratings(human_battles(round_id=judged_round.pk), method="bt").to_dict()
    ours = {m["model"]: m["rating"] for m in report["models"]}
    assert ours == pytest.approx({m["model"]: m["rating"] for m in expected["models"]})
    # The planted order shows through with 80 % consistent judges.
    assert ours["model-good"] > ours["model-mid"] > ours["model-bad"]
    assert sum(m["battles"] for m in report["models"]) == 2 * 36


def test_ratings_command_from_the_database_errors():
    with pytest.raises(CommandError, match="no pairwise judgments in the database"):
        call_command("ratings", "--from-db", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no pairwise round with id 999"):
        call_command("ratings", "--from-db", "--round", "999", stdout=io.StringIO())
    with pytest.raises(CommandError, match="either a battle FILE or --from-db"):
        call_command("ratings", stdout=io.StringIO())
