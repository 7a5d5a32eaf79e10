"""The third provider's client: publish a task with one place per judgment still needed, vouch for
arrivals and submissions by the worker's place, list submissions, approve, reject and pay."""
from __future__ import annotations

from decimal import Decimal

from annotation.selectors import slots_still_needed
from providers.base import CrowdProvider, PublishResult, RemoteSubmission

from . import platform


class ThirdProvider(CrowdProvider):
    name = "third"
    label = "Third crowd"
    worker_urls = "tests.providers.third_provider.urls"
    rate_limited_views = {"task_request": ("task",)}
    fee = Decimal("0.10")

    def publish(self, *, round, publication) -> PublishResult:
        needed = sum(slots_still_needed(round=round).values())
        if publication.external_id:
            return PublishResult(publication=publication, tasks_existing=needed)
        publication.external_id = platform.PLATFORM.create_task(round_id=round.pk, places=needed,
                                                                reward=round.reward_per_task)
        publication.save(update_fields=["external_id"])
        return PublishResult(publication=publication, tasks_created=needed)

    def task_url_parameters(self) -> list[str]:
        return ["worker", "place", "task"]

    def check_arrival(self, *, worker, provider_assignment_id, provider_task_id) -> bool | None:
        return platform.PLATFORM.place(place_id=provider_assignment_id, task_id=provider_task_id,
                                       worker_id=worker.external_id) is not None

    def confirm(self, *, assignment) -> bool | None:
        place = platform.PLATFORM.place(place_id=assignment.provider_assignment_id,
                                        task_id=assignment.provider_task_id, worker_id=assignment.worker.external_id)
        return place is not None

    def list_submissions(self, *, publication) -> list[RemoteSubmission]:
        return [RemoteSubmission(provider_assignment_id=place.id, worker_external_id=place.worker_id,
                                 provider_task_id=place.task_id, status=place.status, provider_status=place.status)
                for place in platform.PLATFORM.places.values() if place.task_id == publication.external_id]

    def approve(self, *, assignment, feedback: str) -> None:
        platform.PLATFORM.decide(assignment.provider_assignment_id, "approved")

    def reject(self, *, assignment, feedback: str) -> None:
        platform.PLATFORM.decide(assignment.provider_assignment_id, "rejected")

    def send_bonus(self, *, payment) -> None:
        platform.PLATFORM.pay(payment.worker.external_id, payment.amount, "bonus")

    def block(self, *, worker, reason: str) -> None:
        platform.PLATFORM.blocked.add(worker.external_id)

    def expire(self, *, publication) -> None:
        if publication.external_id in platform.PLATFORM.tasks:
            platform.PLATFORM.tasks[publication.external_id]["open"] = False

    def balance(self) -> Decimal | None:
        return platform.PLATFORM.balance

    def fee_rate(self, *, round) -> Decimal:
        return self.fee
