"""Reference verification: is the LLM's candidate answer correct, or is the caption or the answer wrong?"""
from __future__ import annotations

from collections import Counter

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import AcceptedReference, Instance, ReferenceCandidate, Source, Verification

from .base import TaskType, clean_text, current_captions, instance_view, require_dict

# What a worker may answer; "no outcome" is only ever an aggregate (no majority).
WORKER_OUTCOMES = [
    Verification.Outcome.CORRECT,
    Verification.Outcome.CAPTION_PROBLEM,
    Verification.Outcome.RESPONSE_PROBLEM,
]
OUTCOME_TO_DISCARD_REASON = {
    Verification.Outcome.CAPTION_PROBLEM: Instance.DiscardReason.CAPTION,
    Verification.Outcome.RESPONSE_PROBLEM: Instance.DiscardReason.RESPONSE,
    Verification.Outcome.NO_OUTCOME: Instance.DiscardReason.UNVERIFIED,
}
TRUE_WORDS = {"true", "1", "on", "yes"}
FALSE_WORDS = {"false", "0", "off", "no", ""}


def _clean_bool(value, *, label: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in TRUE_WORDS | FALSE_WORDS:
        return value.lower() in TRUE_WORDS
    if value is None:
        return False
    raise ValidationError(_("%(field)s must be true or false.") % {"field": label})


class VerificationTask(TaskType):
    key = "verification"
    label = gettext_lazy("Reference verification")
    template_name = "annotation/tasks/verification.html"
    instructions = gettext_lazy(
        "Read the instruction, look at the image(s) and the caption(s), then judge the answer written "
        "by a language model from the captions. Is it correct? If not, is the problem that the caption "
        "missed something the instruction needs, or is the answer itself wrong? Also flag answers that "
        "give offensive, unsound or harmful advice."
    )

    def make_item(self, *, round, target, position):
        from ..models import WorkItem

        if not isinstance(target, ReferenceCandidate):
            raise ValidationError("verification items are reference candidates")
        return WorkItem(round=round, position=position, candidate=target)

    def context(self, assignment):
        candidate = assignment.item.candidate
        return {
            "instance": instance_view(candidate.instance),
            "captions": current_captions(candidate.instance),
            "candidate": {"text": candidate.text},
            "outcomes": [
                {"value": Verification.Outcome.CORRECT.value, "label": _("Correct")},
                {"value": Verification.Outcome.CAPTION_PROBLEM.value,
                 "label": _("Incorrect: the caption misses or misstates something")},
                {"value": Verification.Outcome.RESPONSE_PROBLEM.value,
                 "label": _("Incorrect: the answer is wrong although the caption is fine")},
            ],
        }

    def validate(self, *, assignment, data, files):
        data = require_dict(data)
        outcome = data.get("outcome")
        if not outcome:
            raise ValidationError(_("Choose whether the answer is correct."))
        if outcome not in WORKER_OUTCOMES:
            raise ValidationError(_("Unknown judgment %(value)s.") % {"value": str(outcome)[:50]})
        return {
            "outcome": outcome,
            "harmful": _clean_bool(data.get("harmful"), label=_("The harmful flag")),
            "comment": clean_text(data, "comment", label=_("The comment"), max_length=2000, required=False),
        }

    def result(self, assignment):
        return {"outcome": assignment.payload["outcome"], "harmful": assignment.payload["harmful"]}

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
        """Majority outcome (a tie is no outcome); a majority harmful flag discards as harmful."""
        from ..models import Assignment

        judgments = list(
            item.assignments.submitted()
            .exclude(review_status=Assignment.ReviewStatus.REJECTED)
            .values_list("payload", flat=True)
        )
        if not judgments:
            return None
        votes = Counter(payload["outcome"] for payload in judgments)
        (top, top_count), *rest = votes.most_common()
        outcome = top if not rest or rest[0][1] < top_count else Verification.Outcome.NO_OUTCOME
        harmful_votes = sum(payload["harmful"] for payload in judgments)
        harmful = harmful_votes * 2 > len(judgments)
        candidate = item.candidate
        Verification.objects.update_or_create(
            candidate=candidate,
            is_aggregate=True,
            defaults={"outcome": outcome, "harmful": harmful, "source": Source.CROWD, "comment": ""},
        )
        instance = candidate.instance
        if outcome == Verification.Outcome.CORRECT and not harmful:
            instance.status = Instance.Status.VERIFIED
            instance.discard_reason = Instance.DiscardReason.NONE
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
            instance.status = Instance.Status.DISCARDED
            instance.discard_reason = (
                Instance.DiscardReason.HARMFUL if harmful else OUTCOME_TO_DISCARD_REASON[outcome]
            )
        instance.full_clean()
        instance.save(update_fields=["status", "discard_reason", "updated_at"])
        return {
            "outcome": str(outcome),
            "harmful": harmful,
            "votes": {str(key): count for key, count in votes.items()},
            "harmful_votes": harmful_votes,
        }
