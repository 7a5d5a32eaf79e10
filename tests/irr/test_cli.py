"""``manage.py irr_report``: CSV in, tables, JSON, CSV files and a PNG out; clear errors on bad input."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

RANKINGS_CSV = """item_id,annotator_id,review_id,rank,language,prompt_rank
富士山の写真,田中,レビュー1,1,ja,1
富士山の写真,田中,レビュー2,2,ja,2
富士山の写真,田中,レビュー3,3,ja,3
富士山の写真,佐藤,レビュー1,1,ja,1
富士山の写真,佐藤,レビュー2,3,ja,2
富士山の写真,佐藤,レビュー3,2,ja,3
富士山の写真,鈴木,レビュー1,3,ja,1
富士山の写真,鈴木,レビュー2,2,ja,2
富士山の写真,鈴木,レビュー3,1,ja,3
dish,ann,r1,1,en,1
dish,ann,r2,2,en,2
dish,ann,r3,3,en,3
dish,bob,r1,3,en,1
dish,bob,r2,2,en,2
dish,bob,r3,1,en,3
lone,ann,x1,2,en,1
lone,ann,x2,1,en,2
"""

SCORES_CSV = """item_id,model,review_id,score
富士山の写真,llava,レビュー1,12.5
富士山の写真,llava,レビュー2,14.0
富士山の写真,llava,レビュー3,14.0
dish,llava,r1,3.0
dish,llava,r2,2.0
dish,llava,r3,1.0
"""


def write(path: Path, text: str, *, bom: bool = False) -> Path:
    path.write_bytes(("\ufeff" if bom else "").encode("utf-8") + text.encode("utf-8"))
    return path


def run(*args) -> str:
    stdout = io.StringIO()
    call_command("irr_report", *map(str, args), stdout=stdout)
    return stdout.getvalue()


def test_report_with_japanese_ids_writes_json_csv_and_png(tmp_path):
    rankings = write(tmp_path / "rankings.csv", RANKINGS_CSV, bom=True)
    scores = write(tmp_path / "scores.csv", SCORES_CSV)
    out = tmp_path / "report.json"
    printed = run("--rankings", rankings, "--model-scores", scores, "--json", out, "--csv-dir", tmp_path / "tables",
                  "--plot", tmp_path / "sweep.png")

    report = json.loads(out.read_text(encoding="utf-8"))
    assert {"items", "sweep", "models", "human_reference", "prompt_rank", "extra_annotator"} <= set(report)
    items = {item["item_id"]: item for item in report["items"]}
    assert set(items) == {"富士山の写真", "dish", "lone"}
    for item in report["items"]:
        assert {"item_id", "best_pair", "best_rho", "kept"} <= set(item)
    # 田中 1,2,3; 佐藤 1,3,2 (0.5 with 田中); 鈴木 3,2,1 (-1 with 田中, -0.5 with 佐藤).
    # Pairs in text order: (佐藤, 田中) = 0.5 is the best.
    fuji = items["富士山の写真"]
    assert fuji["best_pair"] == ["佐藤", "田中"] and fuji["best_rho"] == 0.5 and fuji["kept"] is False
    assert items["dish"] == {**items["dish"], "best_pair": ["ann", "bob"], "best_rho": -1.0, "kept": False}
    assert items["lone"]["best_pair"] is None and items["lone"]["best_rho"] is None and not items["lone"]["kept"]

    sweep = {row["label"]: row for row in report["sweep"]}
    assert [row["threshold"] for row in report["sweep"]] == ["none", "<0", 0.0, 0.2, 0.4, 0.6, 0.8]
    assert (sweep["none"]["kept"], sweep["none"]["mean_rho"]) == (3, -0.25)
    assert (sweep["<0"]["kept"], sweep["<0"]["mean_rho"]) == (2, -0.25)
    assert (sweep["0.4"]["kept"], sweep["0.4"]["mean_rho"]) == (1, 0.5)
    assert (sweep["0.6"]["kept"], sweep["0.6"]["mean_rho"]) == (0, None)

    models = {(row["model"], row["language"]): row for row in report["models"]}
    assert set(models) == {("llava", "en"), ("llava", "ja")}
    assert all({"model", "mean_rho", "items"} <= set(row) for row in report["models"])
    assert models[("llava", "ja")]["items"] == 0 and models[("llava", "ja")]["mean_rho"] is None
    # At 0.4 the Japanese item is kept: llava ranks 1, 2.5, 2.5 -> rho sqrt(0.75) with 田中 and 佐藤 alike.
    by_language = {(row["language"], row["label"]): row for row in report["sweep_by_language"]}
    assert by_language[("ja", "0.4")]["models"]["llava"] == pytest.approx(0.75 ** 0.5)
    assert by_language[("ja", "0.4")]["prompt_rank_rho"] == pytest.approx(0.75)

    tables = tmp_path / "tables"
    items_csv = pd.read_csv(tables / "items.csv", encoding="utf-8", keep_default_na=False)
    assert "富士山の写真" in items_csv["item_id"].tolist()
    assert {"pairs.csv", "sweep.csv", "models.csv", "model_items.csv", "prompt_rank.csv"} <= {
        p.name for p in tables.iterdir()}
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert "Threshold sweep" in printed and "Human (reference)" in printed and "llava" in printed
    assert "extra annotator (model:llava)" in printed


def test_threshold_option_changes_the_keep_decision(tmp_path):
    rankings = write(tmp_path / "rankings.csv", RANKINGS_CSV)
    out = tmp_path / "report.json"
    run("--rankings", rankings, "--threshold", "0.5", "--json", out)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["threshold"] == 0.5
    assert [item["kept"] for item in report["items"]] == [True, False, False]
    assert report["models"] == []
    assert report["human_reference"] == [{"language": "en", "mean_rho": None, "items": 0},
                                         {"language": "ja", "mean_rho": 0.5, "items": 1}]


HEADER = "item_id,annotator_id,review_id,rank\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty"),
        (HEADER, "header but no data rows"),
        ("item_id,annotator_id,rank\nx,a,1\n", "header row, field 'review_id': missing column 'review_id'"),
        (HEADER + "x,a,r1,1\nx,a,r2,two\n", "row 2, field 'rank': 'two' is not an integer"),
        (HEADER + "x,a,r1,1\nx,a,r2,1.5\n", "row 2, field 'rank': '1.5' is not an integer"),
        (HEADER + "x,a,r1,1\nx,a,r2,2\nx,b,r1,2\nx,b,r2,2\n",
         "row 4, field 'rank': item 'x', annotator 'b': rank 2 appears twice"),
        (HEADER + "x,a,r1,1\nx,a,r2,3\n", "row 2, field 'rank': item 'x', annotator 'a': rank 3 is outside 1..2"),
        (HEADER + "x,a,r1,1\nx,,r2,2\n", "row 2, field 'annotator_id': empty value"),
    ],
)
def test_bad_rankings_name_file_row_and_field_and_write_nothing(tmp_path, text, expected):
    rankings = write(tmp_path / "rankings.csv", text)
    out = tmp_path / "report.json"
    with pytest.raises(CommandError) as caught:
        run("--rankings", rankings, "--json", out, "--csv-dir", tmp_path / "tables")
    message = str(caught.value)
    assert message.startswith(str(rankings))
    assert expected in message
    assert not out.exists() and not (tmp_path / "tables").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("item_id,model,review_id\ndish,m,r1\n", "header row, field 'score'"),
        ("item_id,model,review_id,score\ndish,m,r1,1\ndish,m,r2,n/a\ndish,m,r3,2\n",
         "row 2, field 'score': 'n/a' is not a finite number"),
        ("item_id,model,review_id,score\ndish,m,r1,1\ndish,m,r2,2\n",
         "row 1, field 'review_id': model 'm' scores 2 of the 3 reviews of item 'dish'"),
        ("item_id,model,review_id,score\nnowhere,m,r1,1\n", "row 1, field 'item_id': item 'nowhere' has no human"),
    ],
)
def test_bad_model_scores_name_the_scores_file(tmp_path, text, expected):
    rankings = write(tmp_path / "rankings.csv", RANKINGS_CSV)
    scores = write(tmp_path / "scores.csv", text)
    out = tmp_path / "report.json"
    with pytest.raises(CommandError) as caught:
        run("--rankings", rankings, "--model-scores", scores, "--json", out)
    assert str(caught.value).startswith(str(scores))
    assert expected in str(caught.value)
    assert not out.exists()


def test_missing_file_threshold_and_output_folder_are_reported(tmp_path):
    with pytest.raises(CommandError, match="cannot read the file"):
        run("--rankings", tmp_path / "absent.csv")
    rankings = write(tmp_path / "rankings.csv", RANKINGS_CSV)
    with pytest.raises(CommandError, match="--threshold"):
        run("--rankings", rankings, "--threshold", "1.5")
    csv_dir = tmp_path / "tables"
    with pytest.raises(CommandError, match="does not exist"):
        run("--rankings", rankings, "--csv-dir", csv_dir, "--json", tmp_path / "missing" / "report.json")
    assert not csv_dir.exists()
