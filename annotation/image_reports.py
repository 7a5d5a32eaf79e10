"""Workers' reports of task images that do not load: the one writer of ``ImageReport``.

A report names an image as the worker's task page showed it (its address); only an image of that
worker's own assignment can be reported, and a second report of the same image by the same worker
returns the first (idempotent). How often a worker may report is limited by the rate limits
(``settings.RATE_LIMITS["image_report"]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from kernel.errors import ServiceError

from .models import Assignment, ImageReport, Worker
from .task_types import get_task_type

MAX_URL_CHARS = 2000


class InvalidImageReport(ServiceError):
    """The image report was refused."""

    status_code = 400


class UnknownAssignment(ServiceError):
    """Unknown assignment."""

    status_code = 404


@dataclass
class ReportOutcome:
    report: ImageReport
    created: bool


def shown_image_urls(assignment: Assignment) -> set[str]:
    """The image addresses the assignment's page shows (every ``url`` its task context holds)."""
    context = get_task_type(assignment.round.task_type).context(assignment)
    urls: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("url"), str):
                urls.add(value["url"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                walk(inner)

    walk(context)
    return urls


def image_url_of(data: Any) -> Any:
    """The ``image_url`` field of a request body (None when the body is not an object)."""
    return data.get("image_url") if hasattr(data, "get") else None


def report_image(*, assignment_id: Any, worker: Worker, image_url: Any) -> ReportOutcome:
    """Record that ``image_url`` of the worker's assignment did not load (once per worker and image)."""
    try:
        assignment_id = int(assignment_id)
    except (TypeError, ValueError):
        raise UnknownAssignment(_("Unknown assignment.")) from None
    assignment = (
        Assignment.objects.select_related("round", "item").filter(pk=assignment_id, worker=worker).first()
    )
    if assignment is None:
        raise UnknownAssignment(_("Unknown assignment."))
    if not isinstance(image_url, str) or not image_url.strip() or len(image_url) > MAX_URL_CHARS:
        raise InvalidImageReport(_("Name the image to report by its address (image_url)."))
    image_url = image_url.strip()
    if image_url not in shown_image_urls(assignment):
        raise InvalidImageReport(_("This image is not part of your task."))
    existing = ImageReport.objects.filter(worker=worker, image_url=image_url).first()
    if existing is not None:
        return ReportOutcome(report=existing, created=False)
    try:
        with transaction.atomic():
            report = ImageReport.objects.create(
                worker=worker, item=assignment.item, assignment=assignment, image_url=image_url,
                reported_at=timezone.now(),
            )
    except IntegrityError:
        # A concurrent report of the same image by the same worker won: it is the one.
        return ReportOutcome(report=ImageReport.objects.get(worker=worker, image_url=image_url), created=False)
    return ReportOutcome(report=report, created=True)
