"""The CLIP-score ranker on a tiny CLIP built and saved here (no weights can be downloaded).

The model is random, so its rankings mean nothing; what is checked is the plumbing: loading a
saved CLIPModel + CLIPProcessor from a folder, the cosine similarity against CLIP's own forward
pass, the score convention (1 - cos, lower is better), truncation, images from files and data
URLs, unscorable items, and the irr_rank command.
"""
from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from django.core.management import CommandError, call_command
from PIL import Image as PILImage
from tokenizers import pre_tokenizers
from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor, CLIPTokenizer

from datasets_app.models import Review, ReviewSet
from datasets_app.services import store_image
from evaluation.models import ReviewScore
from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem
from evaluation.rankers.clip_score import ClipScoreRanker
from evaluation.rankers.registry import make_ranker
from projects.services import unassigned_project

REVIEWS = [("r1", "A calm lake under a grey sky."), ("r2", "The best photo ever taken!"), ("r3", "湖の写真です。")]


def png(color: str, size=(40, 30)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A CLIP with 2-layer encoders, a byte-level BPE tokenizer with no merges (one token per UTF-8
    byte, every text encodable) and a 32-pixel image processor, saved as transformers saves any CLIP."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: index for index, symbol in enumerate(alphabet + [s + "</w>" for s in alphabet])}
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    images = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    config = CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=77, bos_token_id=vocab["<|startoftext|>"],
                         eos_token_id=vocab["<|endoftext|>"], pad_token_id=vocab["<|endoftext|>"]),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4),
        projection_dim=16,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("models") / "tiny-clip"
    CLIPModel(config).save_pretrained(folder)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def ranker(tiny_clip):
    return ClipScoreRanker(tiny_clip)


def cosines_by_forward_pass(folder, image, texts):
    """Cosine similarity from CLIPModel's forward pass: logits_per_image = exp(logit_scale) * cos."""
    model = CLIPModel.from_pretrained(folder)
    processor = CLIPProcessor.from_pretrained(folder)
    inputs = processor(text=texts, images=image, return_tensors="pt", padding=True, truncation=True, max_length=77)
    with torch.no_grad():
        output = model(**inputs)
        return (output.logits_per_image[0] / model.logit_scale.exp()).double().numpy()


def test_scores_are_one_minus_clips_cosine_similarity(ranker, tiny_clip, tmp_path):
    path = tmp_path / "lake.png"
    path.write_bytes(png("steelblue"))
    frame = ranker.score_items([ReviewItem("i1", "en", REVIEWS, image_url=str(path))])
    assert list(frame.columns) == SCORE_COLUMNS and ranker.unscored == []
    assert set(frame["model"]) == {"tiny-clip"}
    cosines = cosines_by_forward_pass(tiny_clip, PILImage.open(path).convert("RGB"), [text for _, text in REVIEWS])
    np.testing.assert_allclose(frame["score"].to_numpy(), 1.0 - cosines, rtol=0, atol=1e-6)
    # Lower score = higher similarity: the ranking is CLIP's similarity order.
    assert frame.sort_values("score")["review_id"].tolist() == [REVIEWS[i][0] for i in np.argsort(-cosines)]
    assert not np.allclose(cosines, cosines[0])  # the reviews are told apart


def test_batches_truncation_and_data_urls(tiny_clip, tmp_path):
    path = tmp_path / "field.png"
    path.write_bytes(png("olive"))
    long_review = "A very long review of a field. " * 40  # far beyond CLIP's 77 tokens
    reviews = [*REVIEWS, ("long", long_review)]
    one_by_one = ClipScoreRanker(tiny_clip, batch_size=1).score_items([ReviewItem("i", "en", reviews, image_url=str(path))])
    together = ClipScoreRanker(tiny_clip, batch_size=32).score_items([ReviewItem("i", "en", reviews, image_url=str(path))])
    np.testing.assert_allclose(one_by_one["score"], together["score"], rtol=0, atol=1e-6)
    data_url = "data:image/png;base64," + base64.b64encode(png("olive")).decode()
    from_url = ClipScoreRanker(tiny_clip).score_items([ReviewItem("i", "en", reviews, image_url=data_url)])
    np.testing.assert_allclose(from_url["score"], together["score"], rtol=0, atol=1e-9)
    # Truncated: the long review scores as its first 77 tokens do.
    prefix = ClipScoreRanker(tiny_clip).score_items([ReviewItem("i", "en", [("a", long_review[:150]), ("b", "x")],
                                                                image_url=str(path))])
    assert together.set_index("review_id").loc["long", "score"] == pytest.approx(prefix.iloc[0]["score"], abs=1e-6)


def test_items_without_a_readable_image_are_unscored(ranker, tmp_path):
    good = tmp_path / "good.png"
    good.write_bytes(png("red"))
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image at all")
    items = [
        ReviewItem("no-image", "en", REVIEWS),
        ReviewItem("web-only", "en", REVIEWS, image_url="https://images.example.org/lake.jpg"),
        ReviewItem("broken", "en", REVIEWS, image_url=str(broken)),
        ReviewItem("missing", "en", REVIEWS, image_url=str(tmp_path / "gone.png")),
        ReviewItem("bad-data", "en", REVIEWS, image_url="data:image/png;base64,@@@"),
        ReviewItem("good", "en", REVIEWS, image_url=str(good)),
    ]
    frame = ranker.score_items(items)
    assert set(frame["item_id"]) == {"good"}
    reasons = {missing.item_id: missing.reason for missing in ranker.unscored}
    assert list(reasons) == ["no-image", "web-only", "broken", "missing", "bad-data"]
    assert "only known by its URL" in reasons["web-only"]
    assert all(reason.startswith("cannot read the image") for key, reason in reasons.items()
               if key in ("broken", "missing", "bad-data"))


def test_the_registry_needs_a_model_folder(tiny_clip, tmp_path):
    assert isinstance(make_ranker("clip-score", model=str(tiny_clip)), ClipScoreRanker)
    with pytest.raises(ValueError, match="needs --model"):
        make_ranker("clip-score")
    with pytest.raises(ValueError, match="CLIP model folder not found"):
        make_ranker("clip-score", model=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="does not hold a CLIP model"):
        make_ranker("clip-score", model=str(tmp_path / "empty"))


@pytest.mark.django_db
def test_irr_rank_command(tiny_clip, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    image = store_image(project=unassigned_project(), content=png("navy"), license="CC0-1.0", category="landscape")
    review_set = ReviewSet.objects.create(project=image.project, image=image, language="en", category="landscape")
    for rank, (_, text) in enumerate(REVIEWS, start=1):
        Review.objects.create(review_set=review_set, prompt_rank=rank, text=text)
    with pytest.raises(CommandError, match="needs --model"):
        call_command("irr_rank", "--ranker", "clip-score", verbosity=0)
    assert not ReviewScore.objects.exists()
    call_command("irr_rank", "--ranker", "clip-score", "--model", str(tiny_clip), verbosity=0)
    stored = ReviewScore.objects.filter(ranker_kind="clip-score", model_name="tiny-clip")
    assert stored.count() == 3
    cosines = cosines_by_forward_pass(tiny_clip, PILImage.open(image.file.path).convert("RGB"),
                                      [text for _, text in REVIEWS])
    by_text = {score.review.text: score.score for score in stored}
    np.testing.assert_allclose([by_text[text] for _, text in REVIEWS], 1.0 - cosines, rtol=0, atol=1e-6)
