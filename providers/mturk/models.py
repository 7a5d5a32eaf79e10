"""The MTurk side of a published round: one HIT per work item."""
from __future__ import annotations

from django.db import models


class HIT(models.Model):
    publication = models.ForeignKey("providers.Publication", on_delete=models.CASCADE, related_name="hits")
    item = models.ForeignKey("annotation.WorkItem", on_delete=models.CASCADE, related_name="mturk_hits")
    hit_id = models.CharField(max_length=100, unique=True)
    hit_type_id = models.CharField(max_length=100)
    unique_request_token = models.CharField(max_length=64, unique=True)
    max_assignments = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["publication_id", "item_id"]
        constraints = [models.UniqueConstraint(fields=["publication", "item"], name="one_hit_per_item")]

    def __str__(self) -> str:
        return f"HIT {self.hit_id} (item {self.item_id})"
