"""Stored results of evaluation runs."""
from django.db import models


class RankerKind(models.TextChoices):
    """How a model's scores were obtained; the names the ``irr_rank`` command takes."""

    LOCAL_PERPLEXITY = "local-perplexity", "Perplexity under a local causal LM"
    SERVER_PERPLEXITY = "server-perplexity", "Perplexity from a completions server's prompt log-probabilities"
    VLM_PERPLEXITY = "vlm-perplexity", "Perplexity given the image, from a vision-language model's prompt log-probabilities"
    CHAT = "chat", "Ranking answered by a chat model"
    CLIP_SCORE = "clip-score", "CLIP image-text cosine distance (1 - similarity)"
    UPLOADED = "uploaded", "Uploaded scores or ranks"


class ReviewScore(models.Model):
    """IRR: one model's score for one review (lower = better: a perplexity or a rank)."""

    review = models.ForeignKey("datasets_app.Review", on_delete=models.CASCADE, related_name="model_scores")
    model_name = models.CharField(max_length=200)
    ranker_kind = models.CharField(max_length=30, choices=RankerKind.choices)
    score = models.FloatField(help_text="Lower is better.")
    prompt_version = models.CharField(
        max_length=200, blank=True,
        help_text="Which prompt produced the score, e.g. a template name@version or a prefix version.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model_name", "ranker_kind", "review_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["review", "model_name", "ranker_kind"], name="one_score_per_review_model_and_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_name} ({self.ranker_kind}) on review {self.review_id}: {self.score:g}"
