"""``manage.py metric_agreement`` end to end on judgments collected through the engine."""
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from datasets_app.models import ModelOutput
from evaluation.metrics.agreement import metric_agreement
from evaluation.metrics.judge_file import JudgeBattle
from stats.metric_agreement import wilson_interval
from tests.annotation.factories import make_instance, make_reference, make_round, make_worker

pytestmark = pytest.mark.django_db

COLOURS = ["red", "blue", "green", "yellow", "purple", "orange", "black", "white", "pink",
           "brown", "grey", "teal", "navy", "olive", "maroon", "cyan", "gold", "silver"]
FAST_METRICS = "bleu4,rougeL,meteor,cider,length,random"
REFERENCE_BACKED = ("bleu4", "rougeL", "meteor", "cider")


def texts(i: int) -> dict[str, str]:
    c1, c2, c3 = COLOURS[3 * i: 3 * i + 3]
    return {
        "reference": f"A {c1} circle is to the left of a {c2} square and a {c3} triangle.",
        # Closest to the reference, then a partial answer, then an off-topic one that is the longest.
        "model-good": f"A {c1} circle is on the left of a {c2} square and a {c3} triangle.",
        "model-mid": f"There is a {c1} circle and a square.",
        "model-bad": "I cannot see the picture clearly, but it might show some kind of animal running through a very big field.",
    }


# Per instance: (better, worse, votes for the better side of five): levels 5/5, 4/5, 3/5.
PLAN = [("model-good", "model-mid", 5), ("model-mid", "model-bad", 4), ("model-good", "model-bad", 3)]


def judge(round, plan_by_item, workers):
    """Every worker judges every item; the better side gets the planned number of votes."""
    for worker in workers:
        while (assignment := request_assignment(round=round, worker=worker)) is not None:
            wanted = plan_by_item[assignment.item_id].pop()
            choice = "left" if assignment.presentation["left"] == wanted else "right"
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})


@pytest.fixture
def planted():
    """Six instances, three models, every model pair judged by five workers, plus reference pairs."""
    targets, plan, instances = [], [], []
    for i in range(6):
        instance = make_instance()
        instances.append(instance)
        text = texts(i)
        reference = make_reference(instance=instance, text=text["reference"])
        outputs = {name: ModelOutput.objects.create(instance=instance, model_name=name, text=text[name])
                   for name in ("model-good", "model-mid", "model-bad")}
        for better, worse, votes in PLAN:
            # Alternate which model is side a, so side a is not always the better one.
            sides = (outputs[better], outputs[worse]) if i % 2 else (outputs[worse], outputs[better])
            targets.append(sides)
            better_side = "a" if sides[0] is outputs[better] else "b"
            worse_side = "b" if better_side == "a" else "a"
            plan.append([better_side] * votes + [worse_side] * (5 - votes))
        targets.append((outputs["model-good"], reference))
        plan.append(["b"] * 5)
    round = make_round(task_type="pairwise", targets=targets, workers_per_item=5)
    items = list(round.items.order_by("position"))
    judge(round, {item.pk: list(votes) for item, votes in zip(items, plan)}, [make_worker() for _ in range(5)])
    return {"round": round, "instances": instances}


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("metric_agreement", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_planted_preferences_are_reconstructed_by_reference_metrics(planted, tmp_path):
    out = run("--metrics", FAST_METRICS, "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.png"))
    assert "18 model-vs-model pairs compared (24 completed items; left out: 6 against the reference" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["pairs"]["compared"] == 18 and report["pairs"]["excluded_against_reference"] == 6
    metrics = {entry["metric"]: entry for entry in report["metrics"]}
    assert list(metrics) == FAST_METRICS.split(",")
    for name in REFERENCE_BACKED:
        accuracy = metrics[name]["accuracy"]
        assert list(accuracy) == ["5/5", "4/5", "3/5", "all"]
        assert accuracy["all"] == {"pairs": 18, "correct": 18, "accuracy": 1.0,
                                   "ci_low": pytest.approx(wilson_interval(18, 18)[0]), "ci_high": 1.0}
        assert metrics[name]["system"]["spearman_rho"] == pytest.approx(1.0)
    # Length prefers the longest answer: right only where good meets mid (the 5/5 pairs).
    length = metrics["length"]["accuracy"]
    assert [length[level]["accuracy"] for level in ("5/5", "4/5", "3/5", "all")] == [1.0, 0.0, 0.0, pytest.approx(1 / 3)]
    assert metrics["length"]["system"]["spearman_rho"] == pytest.approx(-0.5)
    # Human shares of judgments won: good 8/10, mid 4/10, bad 3/10 over the compared pairs.
    shares = metrics["bleu4"]["system"]["models"]
    assert shares["model-good"]["human_win_share"] == pytest.approx(16 / 20)
    assert shares["model-bad"]["human_win_share"] == pytest.approx(3 / 10)
    assert report["metric_settings"][0]["library"].startswith("sacrebleu")


def test_the_random_baseline_and_tie_breaks_follow_the_seed(planted):
    first = metric_agreement(metric_names=["random", "length"], seed=3)
    again = metric_agreement(metric_names=["random", "length"], seed=3)
    other = metric_agreement(metric_names=["random", "length"], seed=4)
    assert first.pairs["random_pick"].tolist() == again.pairs["random_pick"].tolist()
    assert first.pairs["random_pick"].tolist() != other.pairs["random_pick"].tolist()
    # Adding a metric does not move another metric's draws.
    alone = metric_agreement(metric_names=["random"], seed=3)
    assert alone.pairs["random_pick"].tolist() == first.pairs["random_pick"].tolist()


def test_judge_battles_are_matched_in_either_orientation(planted, tmp_path):
    pairs = metric_agreement(metric_names=["length"]).pairs
    battles = []
    for position, row in enumerate(pairs.itertuples()):
        winner = row.human_winner
        if position < 2:  # two deliberate mistakes
            winner = "model_b" if winner == "model_a" else "model_a"
        if position % 3 == 0:  # written the other way round
            battles.append({"instance_id": row.instance_id, "model_a": row.model_b, "model_b": row.model_a,
                            "verdicts": ["B", "B"], "winner": {"model_a": "model_b", "model_b": "model_a"}[winner]})
        else:
            battles.append({"instance_id": row.instance_id, "model_a": row.model_a, "model_b": row.model_b,
                            "verdicts": ["A", "A"], "winner": winner})
    battles.append({"instance_id": 999999, "model_a": "model-good", "model_b": "reference", "verdicts": ["A", "B"],
                    "winner": "tie"})
    path = tmp_path / "judge.json"
    path.write_text(json.dumps({"battles": battles, "judge_model": "gpt-4"}))
    out = run("--metrics", "length", "--judge-json", str(path), "--json", str(tmp_path / "r.json"))
    assert "judge: 18 pairs matched (0 ties broken at random), 1 of 19 judge battles match no compared pair" in out
    judge = {entry["metric"]: entry for entry in json.loads((tmp_path / "r.json").read_text())["metrics"]}["judge"]
    assert judge["label"] == "LLM judge"
    assert judge["accuracy"]["all"]["correct"] == 16 and judge["accuracy"]["all"]["pairs"] == 18


def test_judge_ties_are_broken_at_random_with_the_seed(planted):
    pairs = metric_agreement(metric_names=["length"]).pairs
    ties = [JudgeBattle(int(row.instance_id), row.model_a, row.model_b, "tie") for row in pairs.itertuples()]
    runs = [metric_agreement(metric_names=["length"], judge_battles=ties, seed=seed) for seed in (7, 7, 8)]
    assert runs[0].counts["judge_ties"] == 18
    assert runs[0].pairs["judge_pick"].tolist() == runs[1].pairs["judge_pick"].tolist()
    assert runs[0].pairs["judge_pick"].tolist() != runs[2].pairs["judge_pick"].tolist()
    assert set(runs[0].pairs["judge_pick"]) == {"model_a", "model_b"}


def test_even_splits_and_other_rounds_are_left_out(planted):
    instance = planted["instances"][0]
    outputs = {output.model_name: output for output in instance.model_outputs.all()}
    split_round = make_round(task_type="pairwise", targets=[(outputs["model-good"], outputs["model-mid"])],
                             workers_per_item=2)
    judge(split_round, {split_round.items.get().pk: ["a", "b"]}, [make_worker() for _ in range(2)])
    report = metric_agreement(metric_names=["length"])
    assert report.counts["excluded_even_split"] == 1 and report.counts["compared"] == 18
    with pytest.raises(CommandError, match=f"no completed model-vs-model pairwise items .* in round {split_round.pk}"):
        run("--metrics", "length", "--round", str(split_round.pk))
    only_planted = metric_agreement(metric_names=["length"], round_id=planted["round"].pk)
    assert only_planted.counts == {**report.counts, "completed_items": 24, "excluded_even_split": 0}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"judge.json: invalid JSON at line 1, column 2"),
        ("[1, 2]", r"judge.json: expected a JSON object with a 'battles' list"),
        ('{"battles": {}}', r"judge.json: field 'battles': expected a list"),
        ('{"battles": []}', r"judge.json: field 'battles': no battles"),
        ('{"battles": [7]}', r"judge.json: battles\[0\]: expected an object"),
        ('{"battles": [{"instance_id": "x1", "model_a": "a", "model_b": "b", "winner": "tie"}]}',
         r"judge.json: battles\[0\].instance_id: expected a positive integer, got 'x1'"),
        ('{"battles": [{"instance_id": 1, "model_a": "", "model_b": "b", "winner": "tie"}]}',
         r"battles\[0\].model_a: expected a model name"),
        ('{"battles": [{"instance_id": 1, "model_a": "a", "model_b": "a", "winner": "tie"}]}',
         r"battles\[0\].model_b: the same model as model_a"),
        ('{"battles": [{"instance_id": 1, "model_a": "a", "model_b": "b", "winner": "tie"}, '
         '{"instance_id": 1, "model_a": "a", "model_b": "b", "winner": "A\\u0000"}]}',
         r"battles\[1\].winner: expected one of model_a, model_b, tie, got 'A\\x00'"),
        ('{"battles": [{"instance_id": 1, "model_a": "a", "model_b": "b", "winner": "tie"}, '
         '{"instance_id": 1, "model_a": "b", "model_b": "a", "winner": "tie"}]}',
         r"battles\[1\]: the same pair as battles\[0\]"),
        ("[" * 100_000 + "]" * 100_000, r"judge.json: (JSON nested too deeply|expected a JSON object)"),
    ],
)
def test_malformed_judge_files_name_the_file_and_field(tmp_path, content, message):
    path = tmp_path / "judge.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        run("--metrics", "length", "--judge-json", str(path))


def test_command_errors(tmp_path):
    with pytest.raises(CommandError, match=r"nope.json: no such file"):
        run("--judge-json", str(tmp_path / "nope.json"))
    with pytest.raises(CommandError, match="--metrics: unknown metric bleu; choose from bleu4"):
        run("--metrics", "bleu,length")
    with pytest.raises(CommandError, match="--round: no pairwise round with id 999"):
        run("--round", "999")
    with pytest.raises(CommandError, match="--confidence must lie strictly between 0 and 1"):
        run("--confidence", "1.5")
    with pytest.raises(CommandError, match="no completed model-vs-model pairwise items .* in the database"):
        run("--metrics", "length")


def test_demo_data_end_to_end_with_every_metric(tmp_path):
    """The demo's pairwise round plus a round over every model pair of the demo instances."""
    from annotation.models import CollectionRound

    call_command("load_demo", stdout=io.StringIO())
    demo_round = CollectionRound.objects.get(task_type="pairwise")
    rng = np.random.default_rng(0)
    workers = [make_worker() for _ in range(5)]
    judge(demo_round, {item.pk: list(rng.choice(["a", "b"], size=5)) for item in demo_round.items.all()}, workers)
    targets = []
    for instance_id in demo_round.items.values_list("output_a__instance_id", flat=True).distinct():
        outputs = list(ModelOutput.objects.filter(instance_id=instance_id).order_by("model_name"))
        targets += [(a, b) for i, a in enumerate(outputs) for b in outputs[i + 1:]]
    all_pairs = make_round(task_type="pairwise", targets=targets, workers_per_item=5)
    judge(all_pairs, {item.pk: list(rng.choice(["a", "b"], size=5)) for item in all_pairs.items.all()}, workers)

    out = run("--json", str(tmp_path / "demo.json"), "--plot", str(tmp_path / "demo.png"), "--interval", "clopper-pearson")
    report = json.loads((tmp_path / "demo.json").read_text())
    assert [entry["metric"] for entry in report["metrics"]] == ["bleu4", "rougeL", "meteor", "cider", "bertscore",
                                                                "length", "random"]
    compared = report["pairs"]["compared"]
    assert compared == len(targets) + demo_round.items.filter(reference__isnull=True).count()
    for entry in report["metrics"]:
        assert entry["accuracy"]["all"]["pairs"] == compared
        assert 0 <= entry["accuracy"]["all"]["ci_low"] <= entry["accuracy"]["all"]["accuracy"] <= entry["accuracy"]["all"]["ci_high"]
        assert set(entry["system"]["models"]) == {"llava-demo", "blip2-demo", "instructblip-demo"}
    assert report["interval"] == "clopper-pearson"
    assert "BERTScore" in out
    assert (tmp_path / "demo.png").stat().st_size > 10_000
