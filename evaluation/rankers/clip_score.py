"""CLIP-score baseline for IRR: how well each review matches the image in CLIP's embedding space.

The IRR paper's "CLIP Score (Reference)" row (Hessel et al., 2021): image and review are embedded
by a CLIP model and compared by cosine similarity; a higher similarity ranks a review higher.
Scores in this platform are "lower is better", so the stored score is the cosine *distance*
``1 - cos(image, review)``: the same order, reversed sign. (CLIPScore's ``2.5 * max(cos, 0)``
would tie every negative similarity, so the raw cosine is used for ranking.)

CLIP's text encoder reads at most ``max_position_embeddings`` tokens (77 for the released
models); longer reviews are truncated there, as CLIPScore does. The English CLIP models read
Japanese poorly (the paper reports CLIP for English only); Japanese items are scored all the same.

The model is loaded from a local folder (``CLIPModel`` + ``CLIPProcessor``, transformers'
``save_pretrained`` layout); nothing is downloaded. Images are read from the stored file (or a
``data:`` URL); an image known only by its web address is reported in ``unscored``.
Needs the optional dependencies in ``requirements-lm.txt`` (torch, transformers).
"""
from __future__ import annotations

import base64
import binascii
import io
from pathlib import Path
from typing import Sequence

from .base import ReviewItem, Unscored, scores_frame


class ClipScoreRanker:
    kind = "clip-score"
    uses_llm = False
    needs_scores_file = False

    def __init__(self, model_path: str | Path, *, model_name: str | None = None, batch_size: int = 32):
        try:
            import torch
            from transformers import CLIPModel, CLIPProcessor
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise RuntimeError("the CLIP-score ranker needs the optional packages in requirements-lm.txt") from exc
        path = Path(model_path)
        if not path.is_dir():
            raise ValueError(f"CLIP model folder not found: {model_path}")
        self._torch = torch
        try:
            self.model = CLIPModel.from_pretrained(str(path), local_files_only=True, torch_dtype=torch.float32)
            self.processor = CLIPProcessor.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{model_path} does not hold a CLIP model and processor: {exc}") from None
        self.model.eval()
        self.max_text_tokens = int(self.model.config.text_config.max_position_embeddings)
        self.model_name = model_name or path.name
        self.batch_size = batch_size
        self.prompt_version = ""  # no prompt: the review text alone is embedded
        self.unscored: list[Unscored] = []

    @classmethod
    def from_options(cls, options) -> ClipScoreRanker:
        return cls.from_path(options.model)

    @classmethod
    def from_path(cls, model_path: str | Path | None) -> ClipScoreRanker:
        if not model_path:
            raise ValueError("the clip-score ranker needs --model: a local CLIP model folder")
        return cls(model_path)

    @staticmethod
    def load_image(source: str):
        """A PIL image from a stored file or a ``data:`` URL; ValueError for anything else."""
        from PIL import Image as PILImage, UnidentifiedImageError

        if source.startswith(("http://", "https://")):
            raise ValueError("the image is only known by its URL; CLIP needs the image file (store a copy)")
        try:
            if source.startswith("data:"):
                header, _, payload = source.partition(",")
                if ";base64" not in header:
                    raise ValueError("a data URL image must be base64")
                stream = io.BytesIO(base64.b64decode(payload, validate=True))
            else:
                stream = open(source, "rb")  # noqa: SIM115 - closed below
            with stream, PILImage.open(stream) as image:
                return image.convert("RGB")
        except (OSError, UnidentifiedImageError, binascii.Error) as exc:
            raise ValueError(f"cannot read the image: {exc}") from None

    def similarities(self, image, texts: Sequence[str]):
        """Cosine similarity between the image and each text (a numpy array)."""
        torch = self._torch
        values = []
        with torch.no_grad():
            pixels = self.processor(images=image, return_tensors="pt")
            image_embedding = self.model.get_image_features(**pixels)
            image_embedding = getattr(image_embedding, "pooler_output", image_embedding)
            image_embedding = image_embedding / image_embedding.norm(dim=-1, keepdim=True)
            for start in range(0, len(texts), self.batch_size):
                chunk = list(texts[start:start + self.batch_size])
                encoded = self.processor(text=chunk, return_tensors="pt", padding=True, truncation=True,
                                         max_length=self.max_text_tokens)
                text_embedding = self.model.get_text_features(
                    input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"])
                text_embedding = getattr(text_embedding, "pooler_output", text_embedding)
                text_embedding = text_embedding / text_embedding.norm(dim=-1, keepdim=True)
                values.append((text_embedding @ image_embedding.T).squeeze(-1).double())
        return torch.cat(values).numpy()

    def score_items(self, items: Sequence[ReviewItem]):
        rows, self.unscored = [], []
        for item in items:
            if not item.image_url:
                self.unscored.append(Unscored(item.item_id, "the review set has no image"))
                continue
            try:
                image = self.load_image(item.image_url)
            except ValueError as error:
                self.unscored.append(Unscored(item.item_id, str(error)))
                continue
            similarity = self.similarities(image, [text for _, text in item.reviews])
            rows.extend((item.item_id, item.language, review_id, float(1.0 - value))
                        for (review_id, _), value in zip(item.reviews, similarity))
        return scores_frame(self.model_name, rows)
