"""The review queue's reads and its one write: filters, worker labels, and decisions taken through
the one review path (``providers.review.review_submissions``) on submissions of one project."""
from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Q

from annotation.models import Assignment, CollectionRound, Worker
from annotation.selectors import assignments_for_user, rounds_for_user, submission_review
from annotation.task_types.base import ListField, StrictIntegerField, TextField
from kernel.errors import ServiceError
from projects.models import Project
from providers.registry import provider_class
from providers.review import APPROVE, REJECT, ReviewReport, review_submissions
from quality.selectors import worker_label

PER_PAGE = 20
# MTurk's RequesterFeedback holds at most 1,024 characters (Prolific wants 100+ for a rejection).
MAX_FEEDBACK = 1024
# Review-status filter -> the assignments' review status (None: every submission).
STATUS_FILTERS = {
    "pending": Assignment.ReviewStatus.SUBMITTED,
    "approved": Assignment.ReviewStatus.APPROVED,
    "rejected": Assignment.ReviewStatus.REJECTED,
    "all": None,
}


class InvalidReviewRequest(ServiceError):
    """The review request was refused."""

    status_code = 400


class UnknownSubmissions(ServiceError):
    """Some submissions are not in this project."""

    status_code = 404


def _submissions(user):
    """Submitted work of the user's projects."""
    return assignments_for_user(user).submitted()


def _first_error(form: forms.Form) -> str:
    field, errors = next(iter(form.errors.items()))
    name = form.fields[field].label or field if field in form.fields else ""
    return f"{name}: {' '.join(errors)}" if name else " ".join(errors)


# --- the queue ---------------------------------------------------------------------------------


class WorkerChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, worker):
        return worker_label(worker)


class ReviewFilterForm(forms.Form):
    round = forms.ModelChoiceField(queryset=CollectionRound.objects.none(), required=False, label="round",
                                   empty_label="all rounds")
    status = forms.ChoiceField(choices=[(key, key) for key in STATUS_FILTERS], required=False, label="status")
    worker = WorkerChoiceField(queryset=Worker.objects.none(), required=False, label="worker",
                               empty_label="all workers")
    flagged = forms.BooleanField(required=False, label="flagged")

    def __init__(self, data, *, user, project: Project):
        data = data.copy()
        if not data.get("status"):
            data["status"] = "pending"
        super().__init__(data)
        submissions = _submissions(user).filter(round__project=project)
        self.fields["round"].queryset = rounds_for_user(user).filter(project=project)
        self.fields["worker"].queryset = (
            Worker.objects.filter(pk__in=submissions.values("worker_id")).select_related("user")
        )

    def checked(self) -> dict:
        """The filters, or a 400 naming the refused one."""
        if not self.is_valid():
            raise InvalidReviewRequest(f"Unknown filter value, {_first_error(self)}")
        return self.cleaned_data


def review_queue(*, user, project: Project, round: CollectionRound | None = None, status: str = "pending",
                 worker: Worker | None = None, flagged: bool = False):
    """The project's submissions for review, oldest first, narrowed by round, review status and worker;
    ``flagged``: only those the guardrails flagged (near-duplicates, pasted text) or that failed gold."""
    submissions = _submissions(user).filter(round__project=project)
    if round is not None:
        submissions = submissions.filter(round=round)
    if STATUS_FILTERS[status] is not None:
        submissions = submissions.filter(review_status=STATUS_FILTERS[status])
    if worker is not None:
        submissions = submissions.filter(worker=worker)
    if flagged:
        submissions = submissions.filter(~Q(flags=[]) | Q(gold_passed=False))
    return submissions.select_related("round", "item", "worker__user").order_by("submitted_at", "pk")


@dataclass
class QueueEntry:
    assignment: Assignment
    worker: str
    provider: str
    shown: dict  # annotation.selectors.submission_review: {"template", "review"} or {"error"}


def queue_page(*, submissions, number) -> tuple[Page, list[QueueEntry]]:
    """One page of the queue, each submission with what its worker saw and answered."""
    page = Paginator(submissions, PER_PAGE).get_page(number)
    entries = [
        QueueEntry(
            assignment=assignment,
            worker=worker_label(assignment.worker),
            provider=str(provider_class(assignment.worker.provider).label),
            shown=submission_review(assignment=assignment),
        )
        for assignment in page.object_list
    ]
    return page, entries


# --- decisions ---------------------------------------------------------------------------------


class ReviewDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[(APPROVE, "approve"), (REJECT, "reject")], label="decision")
    feedback = TextField(required=False, max_length=MAX_FEEDBACK, label="feedback")
    ids = ListField(base_field=StrictIntegerField(min_value=1), item_label="submission %(n)d",
                    label="submissions", error_messages={"required": "Choose at least one submission."})

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("decision") == REJECT and not cleaned.get("feedback"):
            self.add_error("feedback", "A rejection needs feedback to the worker.")
        return cleaned

    def refusal(self) -> str:
        """Why nothing can be reviewed as asked (field named), or "" for a valid decision."""
        return "" if self.is_valid() else f"Nothing was reviewed. {_first_error(self)}"

    def checked(self) -> dict:
        if refusal := self.refusal():
            raise InvalidReviewRequest(refusal)
        return self.cleaned_data


def review(*, user, project: Project, ids: list[int], decision: str, feedback: str) -> ReviewReport:
    """Approve or reject these submissions of ``project`` through the one review path. An id that is
    not a submission of the project refuses the whole request (404) before anything is sent."""
    wanted = set(ids)
    assignments = list(_submissions(user).filter(round__project=project, pk__in=wanted).order_by("pk"))
    missing = sorted(wanted - {assignment.pk for assignment in assignments})
    if missing:
        raise UnknownSubmissions(
            f"No submission {', '.join(map(str, missing))} in this project; nothing was reviewed."
        )
    return review_submissions(assignments=assignments, decision=decision, feedback=feedback)
