"""``manage.py ratings``: CSV and JSON-lines input, JSON and PNG output, and bad input."""
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from PIL import Image

from tests.evaluation.test_ratings import fastchat_compute_elo, simulate_battles

CATEGORIES = ["recipe", "humor", "chart"]


@pytest.fixture
def battle_table():
    frame = simulate_battles([0.3, 0.1, -0.1, -0.3], 1200, seed=8, tie_share=0.1)
    frame.loc[frame.index % 17 == 0, "winner"] = "tie (bothbad)"
    frame["category"] = [CATEGORIES[i % 3] for i in range(len(frame))]
    return frame


@pytest.fixture
def csv_file(tmp_path, battle_table):
    path = tmp_path / "battles.csv"
    battle_table.to_csv(path, index=False)
    return path


@pytest.fixture
def jsonl_file(tmp_path, battle_table):
    path = tmp_path / "battles.jsonl"
    with path.open("w") as out:
        for record in battle_table.to_dict("records"):
            out.write(json.dumps(record) + "\n")
    return path


def run(*args):
    stdout, stderr = StringIO(), StringIO()
    call_command("ratings", *map(str, args), stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def test_csv_elo_is_the_single_online_pass_in_file_order(csv_file, battle_table, tmp_path):
    out_path = tmp_path / "elo.json"
    printed, _ = run(csv_file, "--json", out_path)
    document = json.loads(out_path.read_text())
    expected = fastchat_compute_elo(battle_table)
    assert document["method"] == "elo"
    ratings = {row["model"]: row["rating"] for row in document["models"]}
    assert ratings.keys() == expected.keys()
    for model, rating in expected.items():
        assert ratings[model] == pytest.approx(rating, abs=1e-9)
    ordered = sorted(expected, key=expected.get, reverse=True)
    assert [row["model"] for row in document["models"]] == ordered
    assert [row["rank"] for row in document["models"]] == [1, 2, 3, 4]
    assert all(row["ci_low"] is None and row["ci_high"] is None for row in document["models"])
    assert "win_rate_vs_reference" not in document["models"][0]
    # The printed table lists the models best first with their ratings.
    lines = printed.splitlines()
    assert lines[0].split() == ["rank", "model", "rating", "battles"]
    assert [line.split()[1] for line in lines[2:6]] == ordered
    assert f"{expected[ordered[0]]:.1f}" in lines[2]


def test_jsonl_bt_bootstrap_json_schema(jsonl_file, battle_table, tmp_path):
    out_path = tmp_path / "bt.json"
    printed, _ = run(
        jsonl_file, "--method", "bt", "--bootstrap", "200", "--seed", "3",
        "--reference", "model-1", "--anchor", "model-3=800", "--json", out_path,
    )
    document = json.loads(out_path.read_text())
    assert document["method"] == "bt"
    assert document["bootstrap_rounds"] == 200 and document["seed"] == 3
    assert document["anchor"] == {"model": "model-3", "rating": 800.0}
    models = {row["model"]: row for row in document["models"]}
    assert models["model-3"]["rating"] == pytest.approx(800.0)
    for row in document["models"]:
        assert row["ci_low"] < row["rating"] < row["ci_high"]
        assert row["battles"] == int(((battle_table.model_a == row["model"]) | (battle_table.model_b == row["model"])).sum())
    assert models["model-1"]["win_rate_vs_reference"] is None
    against = battle_table[(battle_table.model_a == "model-1") & (battle_table.model_b == "model-0")]
    reverse = battle_table[(battle_table.model_b == "model-1") & (battle_table.model_a == "model-0")]
    points = (
        (against.winner == "model_b").sum() + (reverse.winner == "model_a").sum()
        + 0.5 * (against.winner.str.startswith("tie").sum() + reverse.winner.str.startswith("tie").sum())
    )
    assert models["model-0"]["win_rate_vs_reference"] == pytest.approx(points / (len(against) + len(reverse)))
    assert models["model-0"]["battles_vs_reference"] == len(against) + len(reverse)
    matrix = document["win_rate_matrix"]
    assert set(matrix) == set(models)
    r0, r3 = models["model-0"]["rating"], models["model-3"]["rating"]
    assert matrix["model-0"]["model-3"] == pytest.approx(1 / (1 + 10 ** ((r3 - r0) / 400)))
    assert matrix["model-3"]["model-3"] is None
    assert set(document["category_win_rates"]) == set(CATEGORIES)
    assert "95% interval" in printed and "win rate vs model-1" in printed


def test_bt_without_bootstrap_has_mean_1000_and_equals_the_bootstrap_point(csv_file, tmp_path):
    plain_path, booted_path = tmp_path / "plain.json", tmp_path / "booted.json"
    run(csv_file, "--method", "bt", "--json", plain_path)
    run(csv_file, "--method", "bt", "--bootstrap", "100", "--json", booted_path)
    plain = {row["model"]: row["rating"] for row in json.loads(plain_path.read_text())["models"]}
    booted = {row["model"]: row["rating"] for row in json.loads(booted_path.read_text())["models"]}
    assert np.mean(list(plain.values())) == pytest.approx(1000.0)
    assert booted == pytest.approx(plain)


def test_elo_bootstrap_reports_the_median(csv_file, tmp_path):
    out_path = tmp_path / "elo.json"
    run(csv_file, "--bootstrap", "20", "--json", out_path)
    rows = json.loads(out_path.read_text())["models"]
    assert all(row["ci_low"] <= row["rating"] <= row["ci_high"] for row in rows)
    ranks = [row["rank"] for row in rows]
    assert ranks == sorted(ranks) and ranks[0] == 1


def test_plot_is_a_png(csv_file, tmp_path):
    plot_path = tmp_path / "ratings.png"
    printed, _ = run(csv_file, "--method", "bt", "--bootstrap", "50", "--plot", plot_path)
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(plot_path) as image:
        assert image.format == "PNG"
        width, height = image.size
        assert width > 300 and height > 200
    assert f"wrote {plot_path}" in printed


def test_degenerate_models_are_warned_about(tmp_path):
    path = tmp_path / "one_sided.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\ny,x,model_b\nx,z,model_a\nz,y,tie\n")
    out_path = tmp_path / "out.json"
    _, warnings = run(path, "--method", "bt", "--json", out_path)
    document = json.loads(out_path.read_text())
    assert document["degenerate_models"] == ["x"]
    assert all(np.isfinite(row["rating"]) for row in document["models"])
    assert "never lost a battle: x" in warnings


HEADER = "model_a,model_b,winner\n"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("no_winner.csv", "model_a,model_b\nx,y\n", ["missing column 'winner'"]),
        ("unknown.csv", HEADER + "x,y,model_a\nx,y,draw\n", ["data row 2", "field 'winner'", "'draw'"]),
        ("self.csv", HEADER + "x,y,model_a\ny,x,tie\nz,z,tie\n", ["data row 3", "field 'model_b'", "itself"]),
        ("blank.csv", HEADER + "x,,model_a\n", ["data row 1", "field 'model_b'", "empty value"]),
        ("empty.csv", "", ["empty file"]),
        ("header_only.csv", HEADER, ["empty file"]),
        ("empty.jsonl", "\n\n", ["empty file"]),
        (
            "unknown.jsonl",
            '{"model_a": "x", "model_b": "y", "winner": "tie"}\n\n{"model_a": "x", "model_b": "y", "winner": "A"}\n',
            ["line 3", "field 'winner'", "'A'"],
        ),
        ("no_model_b.jsonl", '{"model_a": "x", "winner": "tie"}\n', ["missing column 'model_b'"]),
        (
            "partial.jsonl",
            '{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": "x", "winner": "tie"}\n',
            ["line 2", "field 'model_b'", "missing value"],
        ),
        ("broken.jsonl", '{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": \n', ["line 2", "invalid JSON"]),
        # A line nested 100,000 deep and a 100,000-digit number stopped the command with a traceback.
        ("deep.jsonl", '{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": ' + "[" * 100_000
         + "]" * 100_000 + "}\n", ["line 2", "field 'model_a'", "nested more than 20 levels"]),
        ("huge.jsonl", '{"model_a": "x", "model_b": "y", "winner": "tie", "round": 1' + "0" * 99_999 + "}\n",
         ["line 1", "field 'round'", "a number in the JSON has more than 50 characters"]),
        ("list.json", '["x", "y", "tie"]\n', ["line 1", "JSON object"]),
        ("battles.txt", HEADER + "x,y,tie\n", ["unknown file type"]),
    ],
)
def test_bad_input_names_file_row_and_field(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(CommandError) as raised:
        run(path)
    message = str(raised.value)
    assert message.startswith(str(path))
    for fragment in expected:
        assert fragment in message


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--anchor", "model-0"], "MODEL=RATING"),
        (["--anchor", "model-0=high"], "MODEL=RATING"),
        (["--anchor", "nobody=1000"], "--anchor: model 'nobody'"),
        (["--reference", "nobody"], "--reference: model 'nobody'"),
        (["--bootstrap", "0"], "at least 1"),
    ],
)
def test_bad_options(csv_file, options, expected):
    with pytest.raises(CommandError, match=expected):
        run(csv_file, *options)


def test_missing_file(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run(tmp_path / "absent.csv")
