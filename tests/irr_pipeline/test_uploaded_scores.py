"""Uploaded scores or ranks, checked against the items they claim to score."""
from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem
from evaluation.rankers.registry import make_ranker
from evaluation.rankers.uploaded import UploadedScoresError, UploadedScoresRanker
from kernel.registry import UnknownName

ITEMS = [
    ReviewItem("7", "en", [("70", "a"), ("71", "b"), ("72", "c")]),
    ReviewItem("8", "ja", [("80", "あ"), ("81", "い"), ("82", "う")]),
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scores.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_scores_for_several_models(tmp_path):
    path = write(tmp_path, "item_id,model,review_id,score\n"
                           "7,llava,70,12.5\n7,llava,71,3\n7,llava,72,7.25\n"
                           "8,llava,80,1\n8,llava,81,2\n8,llava,82,3\n"
                           "7,qwen,70,1\n7,qwen,71,1\n7,qwen,72,2\n")
    ranker = make_ranker("uploaded", scores_path=path)
    frame = ranker.score_items(ITEMS)
    assert list(frame.columns) == SCORE_COLUMNS
    assert frame.values.tolist() == [
        ["7", "llava", "en", "70", 12.5], ["7", "llava", "en", "71", 3.0], ["7", "llava", "en", "72", 7.25],
        ["8", "llava", "ja", "80", 1.0], ["8", "llava", "ja", "81", 2.0], ["8", "llava", "ja", "82", 3.0],
        ["7", "qwen", "en", "70", 1.0], ["7", "qwen", "en", "71", 1.0], ["7", "qwen", "en", "72", 2.0],
    ]
    assert ranker.unscored == []
    only_qwen = UploadedScoresRanker(path, model_name="qwen")
    assert set(only_qwen.score_items(ITEMS)["model"]) == {"qwen"}
    assert [u.item_id for u in only_qwen.unscored] == ["8"]


def test_ranks_are_scores_too(tmp_path):
    path = write(tmp_path, "item_id,model,review_id,rank,language\n7,gpt,72,1,en\n7,gpt,70,2,en\n7,gpt,71,3,en\n")
    frame = UploadedScoresRanker(path).score_items(ITEMS)
    assert dict(zip(frame["review_id"], frame["score"])) == {"72": 1.0, "70": 2.0, "71": 3.0}


@pytest.mark.parametrize("text, message", [
    ("item_id,model,review_id,score\n7,m,70,1\n9,m,90,2\n", "row 2, field 'item_id': unknown item '9'"),
    ("item_id,model,review_id,score\n7,m,70,1\n7,m,80,2\n7,m,72,3\n", "row 2, field 'review_id': item '7' has no review '80'"),
    ("item_id,model,review_id,score\n7,m,70,1\n7,m,71,2\n", "row 1, field 'review_id': model 'm' scores 2 of the 3"),
    ("item_id,model,review_id,score\n7,m,70,1\n7,m,71,2\n7,m,71,3\n", "row 3, field 'review_id': review '71' of item '7' is scored twice"),
    ("item_id,model,review_id,score\n7,m,70,1\n7,m,71,abc\n7,m,72,3\n", "row 2, field 'score': 'abc' is not a finite number"),
    ("item_id,model,review_id,score,rank\n7,m,70,1,1\n", "field 'rank': give either a 'score' or a 'rank' column"),
    ("item_id,model,review_id\n7,m,70\n", "missing column 'score' (or 'rank')"),
    ("item_id,review_id,score\n7,70,1\n", "missing column 'model'"),
])
def test_bad_files_name_the_row_and_field(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(UploadedScoresError) as caught:
        UploadedScoresRanker(path).score_items(ITEMS)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_model_not_in_the_file(tmp_path):
    path = write(tmp_path, "item_id,model,review_id,score\n7,m,70,1\n7,m,71,2\n7,m,72,3\n")
    with pytest.raises(UploadedScoresError, match="no rows for model 'other'"):
        UploadedScoresRanker(path, model_name="other").score_items(ITEMS)


def test_unknown_ranker_name():
    with pytest.raises(UnknownName, match="unknown ranker 'clip'"):
        make_ranker("clip")
