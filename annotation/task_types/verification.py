"""Reference verification: is the LLM's candidate answer correct, or is the caption or the answer wrong?"""
from __future__ import annotations

from collections import Counter

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, ProtectedError, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app import instance_status
from datasets_app.models import AcceptedReference, Instance, ReferenceCandidate, Source, Verification

from .base import (
    StrictBooleanField,
    TaskType,
    TextField,
    current_captions,
    gold_choice,
    instance_view,
    majority_agreement,
)
from .sources import ItemSource, ItemSpec, SourceResult, limit_field, limited, queued_targets

# What a worker may answer; "no outcome" is only ever an aggregate (no majority).
WORKER_OUTCOMES = [
    (Verification.Outcome.CORRECT, gettext_lazy("Correct")),
    (Verification.Outcome.CAPTION_PROBLEM, gettext_lazy("Incorrect: the caption misses or misstates something")),
    (Verification.Outcome.RESPONSE_PROBLEM,
     gettext_lazy("Incorrect: the answer is wrong although the caption is fine")),
]
OUTCOME_TO_DISCARD_REASON = {
    Verification.Outcome.CAPTION_PROBLEM: Instance.DiscardReason.CAPTION,
    Verification.Outcome.RESPONSE_PROBLEM: Instance.DiscardReason.RESPONSE,
    Verification.Outcome.NO_OUTCOME: Instance.DiscardReason.UNVERIFIED,
}


class VerificationForm(forms.Form):
    outcome = forms.ChoiceField(
        choices=[(str(value), label) for value, label in WORKER_OUTCOMES],
        error_messages={
            "required": gettext_lazy("Choose whether the answer is correct."),
            "invalid_choice": gettext_lazy("Unknown judgment %(value)s."),
        },
    )
    harmful = StrictBooleanField(required=False)
    comment = TextField(required=False, max_length=2000)

    def clean_outcome(self):
        return str(self.cleaned_data["outcome"])


class CandidatesParams(forms.Form):
    limit = limit_field()


class CandidatesSource(ItemSource):
    key = "reference_candidates"
    label = "Reference candidates"
    description = ("Reference candidates of instances awaiting verification that have no verdict yet and are "
                   "not already waiting in an item of a verification round that is not closed or cancelled.")
    params_form = CandidatesParams
    stage = Instance.Status.AWAITING_VERIFICATION
    stage_action = "open a verification round"

    def plan(self, *, project, params, language, rng):
        candidates = (
            ReferenceCandidate.objects.filter(instance__family__project=project,
                                              instance__status=Instance.Status.AWAITING_VERIFICATION)
            .exclude(verifications__is_aggregate=True).select_related("instance").order_by("pk")
        )
        queued = queued_targets(targets=candidates, task_type=VerificationTask.key, column="candidate")
        specs = [ItemSpec(target=candidate, label=f"#{candidate.instance_id}: {candidate.text[:80]}",
                          instance_id=candidate.instance_id)
                 for candidate in candidates if candidate.pk not in queued]
        return SourceResult(specs=limited(specs, params.get("limit")))

class VerificationTask(TaskType):
    key = "verification"
    label = gettext_lazy("Reference verification")
    template_name = "annotation/tasks/verification.html"
    review_template_name = "annotation/review/verification.html"
    form_class = VerificationForm
    target_model = ReferenceCandidate
    target_fields = ("candidate",)
    item_sources = (CandidatesSource(),)
    # The release's verifications table reads these judgments (``annotation.selectors.verification_judgments``).
    yields = "verifications"
    # An odd panel, so a majority usually exists.
    default_workers_per_item = 3
    instructions = gettext_lazy(
        "Read the instruction, look at the image(s) and the caption(s), then judge the answer written "
        "by a language model from the captions. Is it correct? If not, is the problem that the caption "
        "missed something the instruction needs, or is the answer itself wrong? Also flag answers that "
        "give offensive, unsound or harmful advice."
    )

    coverage_lookup = "candidate__instance__family__name"

    def context(self, assignment):
        candidate = assignment.item.candidate
        return {
            "instance": instance_view(candidate.instance),
            "captions": current_captions(candidate.instance),
            "candidate": {"text": candidate.text},
            "outcomes": [{"value": str(value), "label": str(label)} for value, label in WORKER_OUTCOMES],
        }

    def review_context(self, assignment):
        """The page's instance, captions and candidate, and the worker's judgment in the page's words."""
        labels = {str(value): str(label) for value, label in WORKER_OUTCOMES}
        answers = self.answers(assignment)
        return {"task": self.context(assignment), "answers": answers,
                "outcome_label": labels.get(answers.get("outcome"), answers.get("outcome"))}

    def result(self, assignment):
        return {"outcome": assignment.payload["outcome"], "harmful": assignment.payload["harmful"]}

    def review_choices(self, submissions):
        """The worker's judgment of the answer."""
        made = set(submissions.order_by().values_list("result__outcome", flat=True).distinct())
        return [(str(value), str(label)) for value, label in WORKER_OUTCOMES if str(value) in made]

    def review_choice_filter(self, value):
        return Q(result__outcome=value)

    def review_choice(self, assignment):
        return str((assignment.result or {}).get("outcome") or "")

    def apply(self, assignment, *, uploads):
        verification = Verification(
            candidate=assignment.item.candidate,
            outcome=assignment.payload["outcome"],
            harmful=assignment.payload["harmful"],
            comment=assignment.payload["comment"],
            source=Source.CROWD,
            worker=assignment.worker.user,
        )
        verification.full_clean()
        verification.save()
        assignment.result = {**self.result(assignment), "verification_id": verification.pk}

    def aggregate(self, item):
        """Majority outcome (a tie is no outcome); a majority harmful flag discards as harmful.

        Computed from scratch each time, so a verdict revised after a rejected judgment replaces the
        earlier one; with no judgment left the verdict is withdrawn.
        """
        judgments = self.counted_answers(item, "payload")
        candidate = item.candidate
        instance = candidate.instance
        if not judgments:
            self.on_reopened(item)
            return None
        votes = Counter(payload["outcome"] for payload in judgments)
        (top, top_count), *rest = votes.most_common()
        outcome = top if not rest or rest[0][1] < top_count else Verification.Outcome.NO_OUTCOME
        harmful_votes = sum(payload["harmful"] for payload in judgments)
        harmful = harmful_votes * 2 > len(judgments)
        Verification.objects.update_or_create(
            candidate=candidate,
            is_aggregate=True,
            defaults={"outcome": outcome, "harmful": harmful, "source": Source.CROWD, "comment": ""},
        )
        if outcome == Verification.Outcome.CORRECT and not harmful:
            if instance.status != Instance.Status.VERIFIED:
                instance_status.verified(instance)
            if not AcceptedReference.objects.filter(instance=instance).exists():
                reference = AcceptedReference(
                    instance=instance,
                    text=candidate.text,
                    origin=AcceptedReference.Origin.VERIFIED_CANDIDATE,
                    candidate=candidate,
                )
                reference.full_clean()
                reference.save()
        else:
            _drop_reference(candidate)
            instance_status.discarded(
                instance, reason=Instance.DiscardReason.HARMFUL if harmful else OUTCOME_TO_DISCARD_REASON[outcome]
            )
        return {
            "outcome": str(outcome),
            "harmful": harmful,
            "votes": {str(key): count for key, count in votes.items()},
            "harmful_votes": harmful_votes,
        }

    def on_reopened(self, item):
        """The verdict no longer stands: the instance waits for verification again."""
        candidate = item.candidate
        instance = candidate.instance
        Verification.objects.filter(candidate=candidate, is_aggregate=True).delete()
        _drop_reference(candidate)
        if instance.status in (Instance.Status.VERIFIED, Instance.Status.DISCARDED):
            instance_status.verdict_withdrawn(instance)

    def settled_items(self):
        """Items of a candidate that another item has already judged (its verdict stands), or of an
        instance already verified (through any candidate): more judgments there would be paid for
        nothing. A verdict withdrawn after a rejection makes them wanted again."""
        decided = Verification.objects.filter(candidate=OuterRef("candidate"), is_aggregate=True)
        return Q(candidate__instance__status=Instance.Status.VERIFIED) | Q(Exists(decided))

    def agreement_so_far(self, round):
        """How far the verifiers of each reference agree on its outcome: majority levels and agreement."""
        votes = [(item, worker, payload["outcome"]) for item, worker, payload in
                 round.assignments.counted().values_list("item_id", "worker_id", "payload")]
        return majority_agreement(label=_("Verification agreement"), unit=_("References"), votes=votes)

    def simulate(self, *, assignment, rng, accuracy):
        item = assignment.item
        expected = item.gold_answer.get("outcome") if item.is_gold else None
        outcome = gold_choice(rng=rng, accuracy=accuracy, choices=[str(v) for v, _label in WORKER_OUTCOMES],
                              expected=expected)
        return {"outcome": outcome, "harmful": False, "comment": ""}

    adaptive_overlap = True

    def gold_feedback(self, assignment):
        if assignment.gold_passed:
            return _("Your answer was right.")
        expected = dict(WORKER_OUTCOMES).get(assignment.item.gold_answer.get("outcome"))
        if expected is None:
            return _("Your answer was not right.")
        return _("Your answer was not right: the right judgment was “%(label)s”.") % {"label": expected}

    def quality_label(self, assignment):
        return (assignment.payload or {}).get("outcome")

    def judgment_queryset(self, assignments):
        return assignments.select_related("item__candidate")

    def judgment_rows(self, assignment):
        """One verdict per judgment: the worker's outcome and harm flag on a candidate of the instance."""
        item = assignment.item
        return [{
            "round_id": assignment.round_id,
            "item_id": item.pk,
            "assignment_id": assignment.pk,
            "instance_id": item.candidate.instance_id,
            "candidate_model": item.candidate.model_name,
            "outcome": assignment.payload["outcome"],
            "harmful": bool(assignment.payload["harmful"]),
            "worker_id": assignment.worker_id,
            "is_gold": item.is_gold,
            "submitted_at": assignment.submitted_at,
            "duration_seconds": assignment.duration_seconds,
        }]

    def gold_question(self, item):
        choices = [(str(value), str(label)) for value, label in WORKER_OUTCOMES]
        if item.gold_answer.get("outcome") not in dict(choices):
            return None
        candidate = item.candidate
        return {
            "text": f"Instruction: {candidate.instance.instruction}\n\nAnswer: {candidate.text}\n\n"
                    "Is the answer correct?",
            "choices": choices,
            "expected": item.gold_answer["outcome"],
        }


def _drop_reference(candidate) -> None:
    """Remove the accepted reference this candidate became, unless a pairwise item already uses it."""
    try:
        AcceptedReference.objects.filter(
            candidate=candidate, origin=AcceptedReference.Origin.VERIFIED_CANDIDATE
        ).delete()
    except ProtectedError:
        raise ValidationError(_(
            "The verified reference of this candidate is already a side of pairwise items; "
            "its verdict cannot change."
        )) from None
