"""The one review path: approve or reject submissions, one or many, with feedback to the worker.

For a provider's worker the decision is made at the provider first (Prolific's submission
transition, MTurk's ApproveAssignment / RejectAssignment with RequesterFeedback), then recorded
here through the engine's recording functions; a local worker's review is recorded directly (the
local provider has nobody to tell). The admin actions, ``pay_round`` and any dashboard call this.
A rerun after a failure finds what was done: providers treat a repeated decision as done.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from annotation.models import Assignment
from annotation.services.confirmation import record_confirmation
from annotation.services.review import approve_assignment, reject_assignment
from kernel.errors import ServiceError

from .base import CrowdProvider
from .registry import get_provider

APPROVE, REJECT = "approve", "reject"
DECISIONS = {
    APPROVE: (Assignment.ReviewStatus.APPROVED, approve_assignment),
    REJECT: (Assignment.ReviewStatus.REJECTED, reject_assignment),
}


class InvalidDecision(ServiceError):
    status_code = 400


@dataclass
class ReviewReport:
    done: list[Assignment] = field(default_factory=list)
    already: list[Assignment] = field(default_factory=list)  # had this decision before
    failed: list[tuple[Assignment, str]] = field(default_factory=list)  # nothing recorded for these


def review_submissions(*, assignments: Iterable[Assignment], decision: str, feedback: str = "",
                       providers: dict[str, CrowdProvider] | None = None) -> ReviewReport:
    """Approve or reject each assignment at its worker's provider, then record it here.

    One refusal (the provider said no, the assignment is not a submission) is reported and the
    others go on; a refused assignment keeps its state here.
    """
    if decision not in DECISIONS:
        raise InvalidDecision(f"unknown review decision {decision!r}; known: {', '.join(DECISIONS)}")
    wanted, record = DECISIONS[decision]
    cache = providers if providers is not None else {}
    report = ReviewReport()
    for assignment in assignments:
        assignment = Assignment.objects.select_related("worker", "round").get(pk=assignment.pk)
        if assignment.status != Assignment.Status.SUBMITTED:
            report.failed.append((assignment, "only submitted work can be approved or rejected"))
            continue
        if assignment.review_status == wanted:
            report.already.append(assignment)
            continue
        try:
            provider = cache.get(assignment.worker.provider) or cache.setdefault(
                assignment.worker.provider, get_provider(assignment.worker.provider))
            if decision == APPROVE and not _confirmed(assignment, provider):
                # Never paid: the provider does not show that this worker did this work.
                report.failed.append((assignment, "the provider has not confirmed this submission"))
                continue
            getattr(provider, decision)(assignment=assignment, feedback=feedback)
            report.done.append(record(assignment=assignment, feedback=feedback))
        except ServiceError as error:
            report.failed.append((assignment, error.message))
    return report


def _confirmed(assignment: Assignment, provider: CrowdProvider) -> bool:
    """Confirmed already, or the provider confirms it now (recorded); a "no" is left to sync_round."""
    if assignment.confirmation == Assignment.Confirmation.CONFIRMED:
        return True
    if not provider.confirm(assignment=assignment):
        return False
    record_confirmation(assignment=assignment, confirmation=Assignment.Confirmation.CONFIRMED)
    return True
