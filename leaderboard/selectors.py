"""What a submitter answers: the project's test set (its verified instances), with image addresses."""
from __future__ import annotations

from datasets_app.model_outputs import instance_image_urls
from datasets_app.models import Instance


def test_set(project):
    """The instances a submission should answer, in id order."""
    return (Instance.objects.filter(family__project=project, status=Instance.Status.VERIFIED)
            .select_related("family").prefetch_related("image_links__image").order_by("pk"))


def image_addresses(instance, absolute) -> list[str]:
    """The instance's image URLs; ``absolute`` turns the path of an uploaded copy into a full URL."""
    return [url if url.startswith(("http://", "https://")) else absolute(url) for url in instance_image_urls(instance)]
