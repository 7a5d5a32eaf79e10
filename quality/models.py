"""Worker quality per round, as last computed by ``quality.services.recompute_round_quality``.

Recomputed from the counted judgments (never edited by hand): one row per (round, worker) and one
summary per round (majority levels and the reliability-weighted aggregation beside the majority).
"""
from __future__ import annotations

from django.db import models


class WorkerQuality(models.Model):
    round = models.ForeignKey("annotation.CollectionRound", on_delete=models.CASCADE, related_name="worker_quality")
    worker = models.ForeignKey("annotation.Worker", on_delete=models.CASCADE, related_name="quality")
    judgments = models.PositiveIntegerField(default=0, help_text="Counted judgments, gold included.")
    gold_answers = models.PositiveIntegerField(default=0)
    gold_passed = models.PositiveIntegerField(default=0)
    gold_accuracy = models.FloatField(null=True, blank=True)
    agreement_scored = models.PositiveIntegerField(
        default=0, help_text="Votes on non-gold items whose other votes have a strict majority.")
    agreement = models.FloatField(null=True, blank=True, help_text="Leave-one-out agreement with the majority.")
    median_seconds = models.FloatField(null=True, blank=True)
    reliability = models.FloatField(null=True, blank=True, help_text="Dawid–Skene probability of a right label.")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["round_id", "worker_id"]
        constraints = [models.UniqueConstraint(fields=["round", "worker"], name="worker_quality_per_round")]
        verbose_name_plural = "worker quality"

    def __str__(self) -> str:
        return f"quality of worker {self.worker_id} in round {self.round_id}"


class RoundQuality(models.Model):
    round = models.OneToOneField("annotation.CollectionRound", on_delete=models.CASCADE, related_name="quality")
    items = models.PositiveIntegerField(default=0, help_text="Non-gold items with at least one judgment.")
    levels = models.JSONField(default=dict, blank=True, help_text='Items per majority level, e.g. {"5/5": 336}.')
    ties = models.PositiveIntegerField(default=0)
    weighted_differs = models.PositiveIntegerField(
        default=0, help_text="Items whose reliability-weighted label differs from a decided majority.")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "round quality"

    def __str__(self) -> str:
        return f"quality of round {self.round_id}"
