"""The review queue's reads and its one write: filters, worker labels, and decisions taken through
the one review path (``providers.review.review_submissions``) on submissions of one project."""
from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Q

from annotation.models import Assignment, CollectionRound, Worker
from annotation.selectors import assignments_for_user, rounds_for_user, submission_review
from annotation.task_types import get_task_type
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


def model_names(submissions) -> list[str]:
    """The models compared in these submissions' items (the side names a task type fills, e.g.
    pairwise), sorted."""
    names = set()
    for side_a, side_b in submissions.order_by().values_list("item__side_a_name", "item__side_b_name").distinct():
        names.update(name for name in (side_a, side_b) if name)
    return sorted(names)


def model_condition(name: str) -> Q:
    return Q(item__side_a_name=name) | Q(item__side_b_name=name)


def choice_options(submissions) -> dict[str, tuple[str, Q]]:
    """Each choice the workers made in these submissions, as each task type reads its own
    (``TaskType.review_choices``): value -> (label, the condition on submissions)."""
    options: dict[str, tuple[str, Q]] = {}
    for key in sorted(set(submissions.order_by().values_list("round__task_type", flat=True).distinct())):
        handler = get_task_type(key)
        for value, label in handler.review_choices(submissions.filter(round__task_type=key)):
            condition = Q(round__task_type=key) & handler.review_choice_filter(value)
            if value in options:  # two types with the same choice: either one's
                label, condition = options[value][0], options[value][1] | condition
            options[value] = (label, condition)
    return dict(sorted(options.items()))


class ReviewFilterForm(forms.Form):
    round = forms.ModelChoiceField(queryset=CollectionRound.objects.none(), required=False, label="round",
                                   empty_label="all rounds")
    status = forms.ChoiceField(choices=[(key, key) for key in STATUS_FILTERS], required=False, label="status")
    worker = WorkerChoiceField(queryset=Worker.objects.none(), required=False, label="worker",
                               empty_label="all workers")
    model = forms.ChoiceField(required=False, label="model")
    choice = forms.ChoiceField(required=False, label="choice")
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
        self.fields["model"].choices = [("", "all models"), *((name, name) for name in model_names(submissions))]
        self.choice_options = choice_options(submissions)
        self.fields["choice"].choices = [("", "any choice"),
                                         *((value, label) for value, (label, _q) in self.choice_options.items())]

    def checked(self) -> dict:
        """The filters, or a 400 naming the refused one; ``choice`` as its condition on submissions."""
        if not self.is_valid():
            raise InvalidReviewRequest(f"Unknown filter value, {_first_error(self)}")
        cleaned = dict(self.cleaned_data)
        cleaned["choice"] = self.choice_options[cleaned["choice"]][1] if cleaned["choice"] else None
        cleaned["model"] = cleaned["model"] or None
        return cleaned


def review_queue(*, user, project: Project, round: CollectionRound | None = None, status: str = "pending",
                 worker: Worker | None = None, flagged: bool = False, model: str | None = None,
                 choice: Q | None = None):
    """The project's submissions for review, oldest first, narrowed by round, review status, worker,
    a model on either side of the item, and the worker's choice (a condition of ``choice_options``);
    ``flagged``: only those the guardrails flagged (near-duplicates, pasted text) or that failed gold."""
    submissions = _submissions(user).filter(round__project=project)
    if model:
        submissions = submissions.filter(model_condition(model))
    if choice is not None:
        submissions = submissions.filter(choice)
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


# --- the export of decisions ----------------------------------------------------------------------

EXPORT_FIELDS = ["submission", "round", "round_name", "task_type", "item", "worker", "provider", "submitted_at",
                 "duration_seconds", "model_a", "model_b", "choice", "is_gold", "gold_passed", "flags",
                 "review_status", "reviewed_at", "feedback"]


def decision_rows(submissions) -> list[dict]:
    """One row per submission: what was judged, what the worker chose, and the review decision with
    its feedback (``EXPORT_FIELDS``); workers by their label, never a provider's id."""
    rows = []
    for assignment in submissions.select_related("round", "item", "worker__user"):
        item = assignment.item
        rows.append({
            "submission": assignment.pk,
            "round": assignment.round_id,
            "round_name": assignment.round.name,
            "task_type": assignment.round.task_type,
            "item": item.number,
            "worker": worker_label(assignment.worker),
            "provider": assignment.worker.provider,
            "submitted_at": assignment.submitted_at.isoformat() if assignment.submitted_at else None,
            "duration_seconds": assignment.duration_seconds,
            "model_a": item.side_a_name,
            "model_b": item.side_b_name,
            "choice": assignment.round.task_type_handler.review_choice(assignment),
            "is_gold": item.is_gold,
            "gold_passed": assignment.gold_passed,
            "flags": ", ".join(str(flag.get("kind", "")) for flag in assignment.flags or []),
            "review_status": assignment.review_status,
            "reviewed_at": assignment.reviewed_at.isoformat() if assignment.reviewed_at else None,
            "feedback": assignment.review_feedback,
        })
    return rows


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
