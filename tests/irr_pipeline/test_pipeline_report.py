"""The IRR pipeline end to end on the database, in English and Japanese: import review sets, crowd
ranking rounds, model rankers (the real SmolLM2, a chat model on the fake server, uploaded ranks), stored
scores, and ``irr_report --from-db`` checked against numbers worked out by hand."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.stats import spearmanr

from annotation.models import Worker
from annotation.selectors import ranking_judgments
from annotation.services.confirmation import record_confirmation
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, create_round, open_round
from annotation.services.submissions import submit_assignment
from annotation.task_types.ranking import shown_order
from datasets_app.models import Review, ReviewSet
from evaluation.models import RankerKind, ReviewScore
from evaluation.selectors import review_items, review_scores
from evaluation.services import ScoreStoreError, rank_and_store, store_review_scores
from projects.services import unassigned_project
from stats import irr

from .conftest import MODEL, user_text

pytestmark = pytest.mark.django_db

SMOLLM2 = "SmolLM2-135M-Instruct"
EN_REVIEWS = [
    "The photo shows a stone lighthouse under a clear blue sky, sharply focused and well exposed.",
    "I feel calm looking at this lighthouse; the soft colours of the sea make it peaceful.",
    "The lighthouse is shown clearly, but the picture should also show the ships it guides at night.",
    "The white tower is boring to me, and the photographer should have painted it purple.",
    "The lighthouse stands in a sandy desert, which makes it look lonely and strange.",
]
JA_REVIEWS = [
    "この写真は青空の下の石造りの風車をはっきりと写しており、構図も整っています。",
    "この風車を見ると、穏やかで懐かしい気持ちになります。",
    "風車は鮮明に写っていますが、内部の機械も写すべきでした。",
    "白い羽は退屈なので、紫色に塗るべきだったと思います。",
    "夜の森の中に立つ風車が、不思議な雰囲気を出しています。",
]
# Each worker's order, as prompt ranks, best first.
EN_ORDERS = {"en-w1": [1, 2, 3, 4, 5], "en-w2": [1, 2, 3, 5, 4], "en-w3": [5, 4, 3, 2, 1]}
JA_ORDERS = {"ja-w1": [2, 1, 3, 4, 5], "ja-w2": [2, 1, 3, 4, 5], "ja-w3": [1, 3, 2, 5, 4]}


def run(command: str, *args) -> str:
    out = io.StringIO()
    call_command(command, *map(str, args), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def import_sets(tmp_path: Path) -> tuple[ReviewSet, ReviewSet]:
    lines = [
        {"item_id": "lighthouse", "language": "en", "category": "Places",
         "image_url": "https://images.example.org/lighthouse.jpg", "reviews": EN_REVIEWS},
        {"item_id": "風車", "language": "ja", "category": "Places",
         "image_url": "https://images.example.org/mill.jpg", "reviews": JA_REVIEWS},
    ]
    path = tmp_path / "reviews.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    run("import_reviews", path)
    return ReviewSet.objects.get(language="en"), ReviewSet.objects.get(language="ja")


def ranking_round(review_set: ReviewSet, orders: dict[str, list[int]]):
    """A language-matched ranking round with three workers, each submitting the given order."""
    round = create_round(name=f"rank {review_set.language}", task_type="ranking",
                               language=review_set.language, workers_per_item=3)
    add_items(round=round, targets=[review_set])
    open_round(round=round)
    review_of = dict(review_set.reviews.values_list("prompt_rank", "pk"))
    for external_id, order in orders.items():
        worker = Worker.objects.create(provider="prolific", external_id=external_id)
        assignment = request_assignment(round=round, worker=worker)
        submit_assignment(assignment_id=assignment.pk, worker=worker,
                                data={"order": shown_order(assignment, [review_of[rank] for rank in order])})
        # Prolific confirms the participant's submission (as the save's lookup or a sync would).
        record_confirmation(assignment=assignment, confirmation="confirmed")
    return round


def worker_ranks(review_set: ReviewSet, order: list[int]) -> list[int]:
    """The worker's rank of each review, reviews in prompt-rank order."""
    return [order.index(prompt_rank) + 1 for prompt_rank in range(1, 6)]


@pytest.fixture
def crowd(tmp_path, llm_settings, fake_server):
    """Imported review sets, a ranking round per language, and two models' stored scores."""
    en_set, ja_set = import_sets(tmp_path)
    en_round = ranking_round(en_set, EN_ORDERS)
    ranking_round(ja_set, JA_ORDERS)

    # A chat model on the fake server that answers in prompt-rank order.
    def prompt_rank_order(endpoint, body):
        shown = dict(line.split(": ", 1) for line in user_text(body).splitlines() if line[:3] in
                     {f"{label}: " for label in "ABCDE"})
        level = {text: rank for texts in (EN_REVIEWS, JA_REVIEWS) for rank, text in enumerate(texts, 1)}
        return " > ".join(sorted(shown, key=lambda label: level[shown[label]]))

    fake_server.responder = prompt_rank_order
    printed = run("irr_rank", "--ranker", "chat")
    assert "chat: 2 of 2 review sets scored (10 review scores stored; model fake-vision)" in printed

    # Uploaded ranks: the reverse of the prompt rank, for the English set only.
    uploaded = tmp_path / "uploaded.csv"
    uploaded.write_text("item_id,model,review_id,rank\n" + "".join(
        f"{en_set.pk},reverse,{review.pk},{6 - review.prompt_rank}\n" for review in en_set.reviews.all()))
    printed = run("irr_rank", "--ranker", "uploaded", "--scores", uploaded, "--language", "en",
                  "--out", tmp_path / "stored.csv")
    assert "uploaded: 1 of 1 review sets scored (5 review scores stored; model reverse)" in printed
    assert len(pd.read_csv(tmp_path / "stored.csv")) == 5
    return en_set, ja_set, en_round


@pytest.fixture
def pipeline(crowd, smollm2):
    """The crowd data plus the real SmolLM2's perplexities, stored."""
    en_set, ja_set, en_round = crowd
    items = review_items()
    assert [item.item_id for item in items] == [str(en_set.pk), str(ja_set.pk)]
    assert items[0].image_url == "https://images.example.org/lighthouse.jpg"
    local = rank_and_store(ranker=smollm2, ranker_kind=RankerKind.LOCAL_PERPLEXITY, items=items)
    assert local.stored == 10 and local.unscored == []
    assert ReviewScore.objects.count() == 25  # SmolLM2 10, chat 10, uploaded 5
    stored = ReviewScore.objects.get(review__review_set=en_set, review__prompt_rank=1, model_name=SMOLLM2)
    assert stored.prompt_version == "perplexity-prefix@1" and stored.ranker_kind == "local-perplexity"
    return en_set, ja_set, en_round, local.scores


def test_report_from_the_database_matches_the_hand_computation(pipeline, tmp_path):
    en_set, ja_set, _, smollm2_scores = pipeline
    out = tmp_path / "report.json"
    printed = run("irr_report", "--from-db", "--json", out, "--csv-dir", tmp_path / "tables",
                  "--plot", tmp_path / "sweep.png")
    report = json.loads(out.read_text(encoding="utf-8"))

    assert report["summary"] == {"items": 2, "evaluable": 2, "kept": 2}
    items = {item["item_id"]: item for item in report["items"]}
    workers = dict(Worker.objects.values_list("external_id", "pk"))
    assert items[en_set.pk]["best_pair"] == sorted([workers["en-w1"], workers["en-w2"]], key=str)
    assert items[en_set.pk]["best_rho"] == pytest.approx(0.9)  # one swap of neighbours: 1 - 6*2/120
    assert items[ja_set.pk]["best_rho"] == pytest.approx(1.0)
    assert (items[en_set.pk]["language"], items[ja_set.pk]["language"]) == ("en", "ja")
    human = {row["language"]: row["mean_rho"] for row in report["human_reference"]}
    assert human == pytest.approx({"en": 0.9, "ja": 1.0})

    # SmolLM2: per item, the mean of Spearman's rho with each worker of the best pair (scipy, by hand).
    expected = {}
    for review_set, orders, pair in ((en_set, EN_ORDERS, ("en-w1", "en-w2")),
                                     (ja_set, JA_ORDERS, ("ja-w1", "ja-w2"))):
        scores = smollm2_scores[smollm2_scores["item_id"] == str(review_set.pk)].set_index("review_id")["score"]
        perplexities = [scores[str(review.pk)] for review in review_set.reviews.order_by("prompt_rank")]
        rhos = [spearmanr(perplexities, worker_ranks(review_set, orders[name])).statistic for name in pair]
        expected[review_set.language] = sum(rhos) / 2
    models = {(row["model"], row["language"]): row for row in report["models"]}
    for language in ("en", "ja"):
        assert models[(SMOLLM2, language)]["mean_rho"] == pytest.approx(expected[language], abs=1e-12)
        assert models[(SMOLLM2, language)]["items"] == 1
    # The chat model ranked in prompt-rank order: rho with (1,2,3,4,5) and (1,2,3,5,4) is 1 and 0.9;
    # in Japanese both workers gave (2,1,3,4,5): 0.9 twice.
    assert models[(MODEL, "en")]["mean_rho"] == pytest.approx(0.95)
    assert models[(MODEL, "ja")]["mean_rho"] == pytest.approx(0.9)
    assert models[("reverse", "en")]["mean_rho"] == pytest.approx(-0.95)
    assert models[("reverse", "ja")]["items"] == 0 and models[("reverse", "ja")]["mean_rho"] is None
    # Prompt rank vs human rank is included (the prompt ranks come with the crowd's rankings).
    assert report["sweep"][5]["label"] == "0.6" and report["sweep"][5]["prompt_rank_rho"] == pytest.approx(
        (0.95 + 0.9) / 2)
    assert "Human (reference)" in printed and SMOLLM2 in printed
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {path.name for path in (tmp_path / "tables").iterdir()} >= {
        "items.csv", "pairs.csv", "sweep.csv", "sweep_by_language.csv", "models.csv", "model_items.csv",
        "human_reference.csv", "prompt_rank.csv", "extra_annotator_sweep.csv"}

    # The same frames through the core and through the file path of the command give the same report.
    rankings = ranking_judgments()[["item_id", "annotator_id", "review_id", "rank", "prompt_rank", "language"]]
    stored = review_scores()[["item_id", "model", "review_id", "score"]]
    assert json.loads(json.dumps(irr.report_json(irr.irr_report(rankings, stored)), ensure_ascii=False)) == report
    rankings.to_csv(tmp_path / "rankings.csv", index=False)
    stored.to_csv(tmp_path / "scores.csv", index=False)
    run("irr_report", "--rankings", tmp_path / "rankings.csv", "--model-scores", tmp_path / "scores.csv",
        "--json", tmp_path / "from_files.json")
    from_files = json.loads((tmp_path / "from_files.json").read_text(encoding="utf-8"))
    assert from_files["models"] == report["models"]
    assert from_files["sweep_by_language"] == report["sweep_by_language"]
    assert from_files.keys() == report.keys()


def test_report_of_one_round(crowd, tmp_path):
    en_set, _, en_round = crowd
    out = tmp_path / "en.json"
    run("irr_report", "--from-db", "--round", en_round.pk, "--json", out)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [item["item_id"] for item in report["items"]] == [en_set.pk]
    assert {row["language"] for row in report["models"]} == {"en"}
    assert {row["model"] for row in report["models"]} == {MODEL, "reverse"}


def test_stored_scores_are_replaced_on_a_re_run(db):
    review_set = ReviewSet.objects.create(project=unassigned_project(), image_id=_image().pk, language="ja", category="Places")
    reviews = [Review.objects.create(review_set=review_set, prompt_rank=rank, text=f"レビュー{rank}") for rank in range(1, 6)]
    frame = pd.DataFrame({"item_id": str(review_set.pk), "model": SMOLLM2, "language": "ja",
                          "review_id": [str(r.pk) for r in reviews], "score": [9.5, 8, 7, 6, 5]})
    assert store_review_scores(frame=frame, ranker_kind=RankerKind.LOCAL_PERPLEXITY,
                               prompt_version="perplexity-prefix@1") == 5
    frame["score"] = frame["score"] + 1
    store_review_scores(frame=frame, ranker_kind=RankerKind.LOCAL_PERPLEXITY, prompt_version="perplexity-prefix@2")
    assert ReviewScore.objects.count() == 5
    assert list(review_scores(model=SMOLLM2)["score"]) == [10.5, 9, 8, 7, 6]
    assert set(ReviewScore.objects.values_list("prompt_version", flat=True)) == {"perplexity-prefix@2"}
    assert review_scores(model=SMOLLM2)[["item_id", "language"]].drop_duplicates().values.tolist() == [
        [review_set.pk, "ja"]]


def test_one_model_name_under_two_rankers_stays_two_models(db):
    review_set = ReviewSet.objects.create(project=unassigned_project(), image_id=_image().pk, language="en", category="Places")
    reviews = [Review.objects.create(review_set=review_set, prompt_rank=rank, text=f"r{rank}") for rank in (1, 2, 3, 4, 5)]
    frame = pd.DataFrame({"item_id": review_set.pk, "model": "m", "language": "en",
                          "review_id": [r.pk for r in reviews], "score": [1.0, 2, 3, 4, 5]})
    store_review_scores(frame=frame, ranker_kind="chat")
    store_review_scores(frame=frame, ranker_kind="uploaded")
    assert set(review_scores()["model"]) == {"m (chat)", "m (uploaded)"}


def test_scores_that_do_not_fit_the_reviews_change_nothing(db):
    review_set = ReviewSet.objects.create(project=unassigned_project(), image_id=_image().pk, language="en")
    other = ReviewSet.objects.create(project=unassigned_project(), image_id=_image().pk, language="ja")
    mine = Review.objects.create(review_set=review_set, prompt_rank=1, text="a")
    theirs = Review.objects.create(review_set=other, prompt_rank=1, text="b")
    frame = pd.DataFrame({"item_id": [review_set.pk, review_set.pk], "model": "m", "language": "en",
                          "review_id": [mine.pk, theirs.pk], "score": [1.0, 2.0]})
    with pytest.raises(ScoreStoreError, match=f"row 2: review {theirs.pk} belongs to review set {other.pk}"):
        store_review_scores(frame=frame, ranker_kind="uploaded")
    with pytest.raises(ScoreStoreError, match="unknown ranker kind 'clip'"):
        store_review_scores(frame=frame.iloc[:1], ranker_kind="clip")
    assert not ReviewScore.objects.exists()


def _image():
    from datasets_app.models import Image

    return Image.objects.create(project=unassigned_project(), url=f"https://images.example.org/{Image.objects.count() + 1}.jpg")


def test_command_errors(db, tmp_path, settings):
    with pytest.raises(CommandError, match="the database has no submitted rankings"):
        run("irr_report", "--from-db")
    with pytest.raises(CommandError, match="--round: no collection round with id 999"):
        run("irr_report", "--from-db", "--round", 999)
    with pytest.raises(CommandError, match="give either --rankings FILE or --from-db"):
        run("irr_report")
    with pytest.raises(CommandError, match="--round needs --from-db"):
        run("irr_report", "--rankings", tmp_path / "r.csv", "--round", 1)
    with pytest.raises(CommandError, match="--ranker uploaded needs --scores FILE"):
        run("irr_rank", "--ranker", "uploaded")
    with pytest.raises(CommandError, match="--budget is only for the rankers that call an LLM server"):
        run("irr_rank", "--ranker", "uploaded", "--scores", tmp_path / "s.csv", "--budget", "1")
    with pytest.raises(CommandError, match="no review sets to rank"):
        run("irr_rank", "--ranker", "uploaded", "--scores", tmp_path / "s.csv")
    ReviewSet.objects.create(project=unassigned_project(), image_id=_image().pk, language="en")
    review_set = ReviewSet.objects.get()
    for rank in range(1, 6):
        Review.objects.create(review_set=review_set, prompt_rank=rank, text=f"review {rank}")
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", ""
    with pytest.raises(CommandError, match="The LLM is not configured"):
        run("irr_rank", "--ranker", "chat")
    bad = tmp_path / "bad.csv"
    bad.write_text(f"item_id,model,review_id,score\n{review_set.pk},m,123456,1\n")
    with pytest.raises(CommandError, match=f"{bad}, row 1, field 'review_id': item '{review_set.pk}' has no review"):
        run("irr_rank", "--ranker", "uploaded", "--scores", bad)
    assert not ReviewScore.objects.exists()


def test_server_perplexity_through_the_command(tmp_path, llm_settings, fake_server):
    en_set, ja_set = import_sets(tmp_path)
    printed = run("irr_rank", "--ranker", "server-perplexity", "--model", "vllm-model")
    assert "server-perplexity: 2 of 2 review sets scored (10 review scores stored; model vllm-model)" in printed
    assert {r.body["model"] for r in fake_server.completion_requests} == {"vllm-model"}
    assert set(ReviewScore.objects.values_list("ranker_kind", flat=True)) == {"server-perplexity"}
    frame = review_scores()
    assert set(frame["item_id"]) == {en_set.pk, ja_set.pk} and (frame["score"] > 1).all()
