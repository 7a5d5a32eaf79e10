"""``agreement_report`` and the stored worker quality on a constructed round with known levels."""
import io
import json

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from quality.models import RoundQuality, WorkerQuality
from quality.services import recompute_round_quality
from quality.tasks import recompute_round_quality_task
from stats.worker_quality import dawid_skene, leave_one_out_agreement
from tests.annotation.factories import make_instance, make_outputs, make_review_set, make_round, make_worker

from .rounds import answer_all, side_choice

pytestmark = pytest.mark.django_db

# Votes for side "a" per item from five workers (worker i votes "a" when i < n): two pairs each at
# 5/5, 4/5 and 3/5. The seventh item is gold ("a"), which the last worker gets wrong.
A_VOTES = [5, 5, 4, 4, 3, 3]


@pytest.fixture
def known_round():
    pairs = [tuple(make_outputs(instance=make_instance())) for _ in range(len(A_VOTES) + 1)]
    round = make_round(task_type="pairwise", targets=pairs, workers_per_item=5,
                       gold_answers={len(A_VOTES): {"winner": "a"}})
    workers = [make_worker(f"worker-{number}") for number in range(5)]

    def answer(worker, assignment):
        number = workers.index(worker)
        item = assignment.item
        wanted = ("a" if number < 4 else "b") if item.is_gold else ("a" if number < A_VOTES[item.position] else "b")
        return side_choice(assignment, wanted)

    answer_all(round, workers, answer)
    return round


def test_the_report_gives_the_known_levels_and_agreements(known_round, tmp_path):
    out, json_path = io.StringIO(), tmp_path / "agreement.json"
    call_command("agreement_report", "--round", str(known_round.pk), "--json", str(json_path), stdout=out)
    report = json.loads(json_path.read_text())
    assert report["pairs"] == 6 and report["judgments"] == 30  # the gold pair is left out
    assert report["levels"] == {"5/5": 2, "4/5": 2, "3/5": 2}
    assert report["ties"] == 0
    workers = {entry["worker"]: entry for entry in report["workers"]}
    assert [workers[f"worker-{n}"]["agreement"] for n in range(5)] == [1.0, 1.0, 1.0, 0.6667, 0.3333]
    # Leave-one-out: the 3/5 pairs give the majority's own voters no strict majority of the others.
    assert [workers[f"worker-{n}"]["loo_scored"] for n in range(5)] == [4, 4, 4, 6, 6]
    assert [workers[f"worker-{n}"]["loo_agreement"] for n in range(5)] == [1.0, 1.0, 1.0, 0.6667, 0.3333]
    text = out.getvalue()
    assert "6 pairs, 30 judgments, 0 tied" in text
    assert "5/5      2   33.3%" in text


def test_the_report_refuses_what_it_cannot_read(known_round):
    with pytest.raises(CommandError, match="no collection round with id 999999"):
        call_command("agreement_report", "--round", "999999", stdout=io.StringIO())
    ranking = make_round(task_type="ranking", targets=[make_review_set()])
    with pytest.raises(CommandError, match="is a ranking round, not a pairwise round"):
        call_command("agreement_report", "--round", str(ranking.pk), stdout=io.StringIO())


def test_paper_levels_through_the_core():
    """690 pairs of five votes, 336 at 5/5, 200 at 4/5 and 154 at 3/5, as in the paper."""
    rows = []
    for pair, n_a in enumerate([5] * 336 + [4] * 200 + [3] * 154):
        rows += [(pair, "a" if worker < n_a else "b", worker) for worker in range(5)]
    frame = pd.DataFrame(rows, columns=["pair", "choice", "worker"])
    from stats.pairwise_agreement import majority_vote

    levels = majority_vote(frame, pair_column="pair", worker_column="worker").level_counts()
    assert levels.to_dict() == {"5/5": 336, "4/5": 200, "3/5": 154}


def test_stored_worker_quality(known_round):
    quality = recompute_round_quality(round=known_round)
    assert quality.levels == {"5/5": 2, "4/5": 2, "3/5": 2} and quality.items == 6
    rows = {row.worker.user.username: row for row in WorkerQuality.objects.filter(round=known_round)}
    assert rows["worker-0"].judgments == 7 and rows["worker-0"].gold_accuracy == 1.0
    assert rows["worker-4"].gold_passed == 0 and rows["worker-4"].gold_accuracy == 0.0
    assert rows["worker-3"].agreement == pytest.approx(4 / 6) and rows["worker-3"].agreement_scored == 6
    assert all(row.median_seconds is not None for row in rows.values())
    # Dawid–Skene trusts least the worker who is outvoted on most pairs.
    reliability = {name: row.reliability for name, row in rows.items()}
    assert min(reliability, key=reliability.get) == "worker-4", reliability
    assert all(0 <= value <= 1 for value in reliability.values())
    # Recomputing replaces the rows, it does not add to them.
    recompute_round_quality(round=known_round)
    assert WorkerQuality.objects.filter(round=known_round).count() == 5
    assert RoundQuality.objects.filter(round=known_round).count() == 1


def test_the_command_and_the_task_call_the_same_service(known_round):
    out = io.StringIO()
    call_command("worker_quality", "--round", str(known_round.pk), stdout=out)
    assert "6 items; 5/5: 2, 4/5: 2, 3/5: 2; 0 tied" in out.getvalue()
    assert "worker-4" in out.getvalue() and "gold 0/1" in out.getvalue()
    report = recompute_round_quality_task.delay(round_id=known_round.pk).get()
    assert report == {"round_id": known_round.pk, "items": 6, "levels": {"5/5": 2, "4/5": 2, "3/5": 2}, "workers": 5}
    with pytest.raises(CommandError, match="No project with slug 'nope'"):
        call_command("worker_quality", "--project", "nope", stdout=io.StringIO())


def test_leave_one_out_skips_lonely_and_tied_votes():
    loo = leave_one_out_agreement([1, 2, 2, 3, 3, 3], ["x", "x", "y", "x", "x", "y"], ["a", "a", "b", "a", "b", "c"])
    # a: task 1 alone (unscored), task 2 the other vote is b's y (disagrees), task 3 the others tie x-y
    # (unscored); b: scored only on task 2; c: the others' x majority on task 3 (disagrees).
    assert loo.loc["a"].tolist() == [3, 1, 0, 0.0]
    assert loo.loc["b"].tolist() == [2, 1, 0, 0.0]
    assert loo.loc["c"].tolist() == [1, 1, 0, 0.0]


def test_dawid_skene_weighs_reliable_workers_over_a_plain_majority():
    # Two careful workers outvoted on one task by three who always answer "x".
    rows = []
    truth = ["x", "y"] * 10
    for task, label in enumerate(truth):
        for worker in ("careful-1", "careful-2"):
            rows.append((task, worker, label))
        for worker in ("lazy-1", "lazy-2", "lazy-3"):
            rows.append((task, worker, "x"))
    model = dawid_skene(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    assert model.labels.tolist() == truth
    assert (model.majority == "x").all()
    assert model.differing_tasks == 10
    assert model.workers["careful-1"] > model.workers["lazy-1"]


def test_weighted_and_plain_labels_are_compared_task_by_task_with_ties_left_out():
    # Tasks in no sorted order, and task 3 tied: crowd-kit keeps first-seen order, the majority is sorted.
    rows = [(task, worker, "x") for task in (9, 2, 7, 1) for worker in ("w", "ww")] + [(3, "w", "x"), (3, "ww", "y")]
    model = dawid_skene(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    assert model.majority.isna().sum() == 1
    assert model.differing_tasks == 0
