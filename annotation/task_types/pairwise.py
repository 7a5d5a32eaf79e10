"""Pairwise preference: a forced choice between two responses to one instance."""
from __future__ import annotations

from collections import Counter

from django import forms
from django.conf import settings
from django.db.models import Q
from django.utils.crypto import salted_hmac
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from datasets_app.models import AcceptedReference, Instance, ModelOutput

from ..samplers import SAMPLERS, Candidates, get_sampler
from .sources import BadItemSource, ItemSource, ItemSpec, ListOfValuesField, SourceResult, ids_field, only_known_ids, seed_field
from .base import TaskType, gold_choice, instance_view, majority_agreement

CHOICES = ("left", "right")


def side_texts(item) -> dict[str, str]:
    return {
        "a": item.output_a.text,
        "b": item.output_b.text if item.output_b_id else item.reference.text,
    }


class PairwiseForm(forms.Form):
    choice = forms.ChoiceField(
        choices=[(choice, choice) for choice in CHOICES],
        error_messages={
            "required": gettext_lazy("Choose the better response (left or right)."),
            "invalid_choice": gettext_lazy("The choice must be left or right."),
        },
    )


class ModelOutputsParams(forms.Form):
    sampler = forms.ChoiceField(choices=lambda: [(name, sampler.label) for name, sampler in SAMPLERS.items()],
                                initial="all_pairs", required=False,
                                help_text="How pairs are drawn (default: all pairs).")
    count = forms.IntegerField(required=False, min_value=1, max_value=100_000,
                               help_text="Tuples to draw (the uniform sampler).")
    models = ListOfValuesField(base_field=forms.CharField(max_length=200), label="Models",
                               help_text="Model names, comma-separated; empty for every model of the project.")
    instance_ids = ids_field("Instances", "Ids of the project's instances; empty for all.", browse="instances")
    seed = seed_field()
    # The adaptive sampler's goal and budget (docs/evaluation.md, "Active pair sampling").
    goal = forms.ChoiceField(choices=[("adjacent", "Separate adjacent ranks"), ("width", "Every interval narrower than W"),
                                      ("top_k", "Find the top k")], required=False,
                             help_text="What the adaptive sampler aims at (default: separate adjacent ranks).")
    goal_level = forms.FloatField(required=False, min_value=0.8, max_value=0.999,
                                  help_text="Confidence level of the goal (default 0.95).")
    goal_width = forms.FloatField(required=False, min_value=1, help_text="W in Elo points (the width goal).")
    goal_k = forms.IntegerField(required=False, min_value=1, help_text="k (the top-k goal).")
    budget_judgments = forms.IntegerField(required=False, min_value=1, max_value=10_000_000,
                                          help_text="Judgments the adaptive sampler may ask for at most.")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("sampler") == "adaptive":
            if not cleaned.get("budget_judgments"):
                self.add_error("budget_judgments", "The adaptive sampler needs a budget of judgments.")
            if cleaned.get("goal") == "width" and not cleaned.get("goal_width"):
                self.add_error("goal_width", "The width goal needs W.")
            if cleaned.get("goal") == "top_k" and not cleaned.get("goal_k"):
                self.add_error("goal_k", "The top-k goal needs k.")
        return cleaned


class ModelOutputsSource(ItemSource):
    key = "model_outputs"
    label = "Model outputs"
    description = "Pairs of the project's model outputs on one instance, drawn by a sampler."
    params_form = ModelOutputsParams

    def plan(self, *, project, params, language, rng):
        sampler = get_sampler(params.get("sampler") or "all_pairs")
        outputs = ModelOutput.objects.filter(instance__family__project=project)
        models = params.get("models") or []
        if models:
            known = set(outputs.filter(model_name__in=models).values_list("model_name", flat=True))
            unknown = [name for name in models if name not in known]
            if unknown:
                raise BadItemSource(f"this project has no outputs of {', '.join(repr(name[:60]) for name in unknown)}")
            outputs = outputs.filter(model_name__in=models)
        if params.get("instance_ids"):
            instances = only_known_ids(Instance.objects.filter(family__project=project), params["instance_ids"],
                                       what="instance")
            outputs = outputs.filter(instance__in=instances)
        rows: dict[int, list[tuple[int, str]]] = {}
        by_id = {}
        for output in outputs.order_by("instance_id", "model_name", "pk"):
            rows.setdefault(output.instance_id, []).append((output.pk, output.model_name))
            by_id[output.pk] = output
        references = {
            reference.instance_id: reference
            for reference in AcceptedReference.objects.filter(instance_id__in=list(rows))
        }
        candidates = [Candidates(instance_id, tuple(found), instance_id in references)
                      for instance_id, found in rows.items()]
        pairs = sampler.pairs(candidates, rng=rng, count=params.get("count"))
        if not pairs:
            needed = ("an output and an accepted reference" if sampler.against_reference
                      else "outputs of at least two models")
            raise BadItemSource(f"no pairs to draw: no instance of this project (with the chosen models) has {needed}")
        specs = [self.describe_pair(by_id[pair.output_a],
                                    by_id[pair.output_b] if pair.output_b is not None else references[pair.instance_id])
                 for pair in pairs]
        return SourceResult(specs=specs, notes={"sampler": sampler.name})

    def after_added(self, *, round, params, items):
        get_sampler(params.get("sampler") or "all_pairs").start(round=round, params=params, items=items)

    @staticmethod
    def describe_pair(side_a, side_b) -> ItemSpec:
        name_b = side_b.model_name if isinstance(side_b, ModelOutput) else settings.ANNOTATION_REFERENCE_SIDE_NAME
        return ItemSpec(target=(side_a, side_b), label=f"#{side_a.instance_id}: {side_a.model_name} vs {name_b}",
                        models=(side_a.model_name, name_b), instance_id=side_a.instance_id)


class PairwiseTask(TaskType):
    key = "pairwise"
    label = gettext_lazy("Pairwise preference")
    template_name = "annotation/tasks/pairwise.html"
    review_template_name = "annotation/review/pairwise.html"
    script_name = "annotation/tasks/pairwise.js"
    form_class = PairwiseForm
    target_fields = ("output_a", "output_b", "reference")
    shown_with_item = ("output_a__instance__family",)
    yields = "battles"
    item_sources = (ModelOutputsSource(),)
    coverage_lookup = "output_a__instance__family__name"
    instructions = gettext_lazy(
        "Read the instruction and look at the image(s). Then choose the better of the two responses, "
        "judging accuracy, helpfulness and detail. You must pick one; if they seem equally good, pick "
        "either. Keys: 1 or ← for the left response, 2 or → for the right one, Enter to submit."
    )

    def target_columns(self, target):
        try:
            side_a, side_b = target
        except (TypeError, ValueError):
            raise ValidationError("pairwise items are (output, output) or (output, accepted reference)") from None
        if not isinstance(side_a, ModelOutput):
            raise ValidationError("the first side of a pairwise item is a model output")
        if isinstance(side_b, ModelOutput):
            return {"output_a": side_a, "output_b": side_b}
        if isinstance(side_b, AcceptedReference):
            return {"output_a": side_a, "reference": side_b}
        raise ValidationError("the second side of a pairwise item is a model output or an accepted reference")

    def target_of(self, item):
        return (item.output_a, item.output_b if item.output_b_id is not None else item.reference)

    def describe(self, target):
        return ModelOutputsSource.describe_pair(*target)

    def check_targets(self, item):
        """Two distinct outputs of one instance, or an output and that instance's accepted reference;
        the side names come from the targets."""
        if item.output_a_id is None:
            raise ValidationError({"output_a": _("A pairwise item needs a model output as side A.")})
        if (item.output_b_id is None) == (item.reference_id is None):
            raise ValidationError({"output_b": _(
                "Side B is either a second model output or the instance's accepted reference (exactly one)."
            )})
        if item.output_b_id is not None:
            if item.output_b_id == item.output_a_id:
                raise ValidationError({"output_b": _("A pair needs two different outputs.")})
            if item.output_b.instance_id != item.output_a.instance_id:
                raise ValidationError({"output_b": _("Both outputs of a pair must answer the same instance.")})
            item.side_a_name, item.side_b_name = item.output_a.model_name, item.output_b.model_name
        else:
            if item.reference.instance_id != item.output_a.instance_id:
                raise ValidationError({"reference": _("The reference must belong to the output's instance.")})
            item.side_a_name = item.output_a.model_name
            item.side_b_name = settings.ANNOTATION_REFERENCE_SIDE_NAME
        if item.side_a_name == item.side_b_name:
            raise ValidationError({"output_b": _("Both sides come from %(name)s; a battle needs two names.")
                                   % {"name": item.side_a_name}})

    def on_completed(self, item):
        name = (item.round.sampler_state or {}).get("sampler")
        if name:
            get_sampler(name).on_item_completed(item)

    def present(self, *, item, rng):
        left = rng.choice(["a", "b"])
        return {"left": left, "right": "b" if left == "a" else "a"}

    def context(self, assignment):
        texts = side_texts(assignment.item)
        return {
            "instance": instance_view(assignment.item.output_a.instance),
            "left": {"text": texts[assignment.presentation["left"]]},
            "right": {"text": texts[assignment.presentation["right"]]},
        }

    def result(self, assignment):
        return {"winner": assignment.presentation[assignment.payload["choice"]]}

    def review_context(self, assignment):
        """As the worker saw it, plus the model behind each side: for the researcher, never the worker."""
        item = assignment.item
        names = {"a": item.side_a_name, "b": item.side_b_name}
        return {**super().review_context(assignment),
                "models": {side: names[assignment.presentation[side]] for side in CHOICES}}

    def review_choices(self, submissions):
        """The model the worker chose."""
        names = set()
        for side_a, side_b in submissions.order_by().values_list("item__side_a_name", "item__side_b_name").distinct():
            names.update(name for name in (side_a, side_b) if name)
        return [(name, f"chose {name}") for name in sorted(names)]

    def review_choice_filter(self, value):
        return Q(result__winner="a", item__side_a_name=value) | Q(result__winner="b", item__side_b_name=value)

    def review_choice(self, assignment):
        winner = (assignment.result or {}).get("winner")
        return {"a": assignment.item.side_a_name, "b": assignment.item.side_b_name}.get(winner, "")

    def history_answers(self, assignments):
        """The model the worker chose, as the review queue names it (a history is a researcher's page);
        "left"/"right" said nothing there."""
        shown = {}
        for assignment in assignments:
            chosen = self.review_choice(assignment)
            shown[assignment.pk] = {_("chose"): chosen} if chosen else self.answers(assignment)
        return shown

    def aggregate(self, item):
        """Majority winner and its size (paper: 5/5, 4/5, 3/5 agreement); an even split is a tie."""
        winners = Counter(result["winner"] for result in self.counted_answers(item, "result"))
        if not winners:
            return None
        votes = {"a": winners.get("a", 0), "b": winners.get("b", 0)}
        if votes["a"] == votes["b"]:
            winner = "tie"
        else:
            winner = "a" if votes["a"] > votes["b"] else "b"
        return {"winner": winner, "votes": votes, "agreement": max(votes.values()), "judgments": sum(votes.values())}

    def simulate(self, *, assignment, rng, accuracy):
        item = assignment.item
        expected = item.gold_answer.get("winner") if item.is_gold else None
        winner = gold_choice(rng=rng, accuracy=accuracy, choices=["a", "b"], expected=expected)
        return {"choice": next(side for side in CHOICES if assignment.presentation[side] == winner)}

    adaptive_overlap = True

    def gold_feedback(self, assignment):
        if assignment.gold_passed:
            return _("Your answer was right.")
        expected = assignment.item.gold_answer.get("winner")
        side = "left" if assignment.presentation.get("left") == expected else "right"
        return _("Your answer was not right: the %(side)s response was the better one.") % {
            "side": _("left") if side == "left" else _("right")}

    def quality_label(self, assignment):
        return (assignment.result or {}).get("winner")

    def gold_question(self, item):
        if item.gold_answer.get("winner") not in ("a", "b"):
            return None
        texts = side_texts(item)
        # The sides appear in an order keyed to the item and the server's secret: stable across
        # re-creations of the test, but the reference (side b) is not always second.
        first = "a" if salted_hmac("pairwise-gold-question", str(item.pk)).digest()[0] & 1 else "b"
        second = "b" if first == "a" else "a"
        return {
            "text": f"Instruction: {item.output_a.instance.instruction}\n\nResponse 1: {texts[first]}\n\n"
                    f"Response 2: {texts[second]}\n\nWhich response is better?",
            "choices": [("1", "Response 1"), ("2", "Response 2")],
            "expected": "1" if item.gold_answer["winner"] == first else "2",
        }

    def agreement_so_far(self, round):
        """Majority levels over the judged pairs (paper: 5/5, 4/5, 3/5) and agreement with the majority."""
        votes = [(item, worker, result["winner"]) for item, worker, result in
                 round.assignments.counted().values_list("item_id", "worker_id", "result")]
        return majority_agreement(label=_("Majority agreement on the pairs"), unit=_("Pairs"), votes=votes)

    def judgment_queryset(self, assignments):
        return assignments.select_related("item__output_a__instance__family")

    def judgment_rows(self, assignment):
        """One battle per judgment: ``winner`` is model_a or model_b (forced choice: humans never tie)."""
        item = assignment.item
        return [{
            "round_id": assignment.round_id,
            "item_id": item.pk,
            "assignment_id": assignment.pk,
            "instance_id": item.output_a.instance_id,
            "category": item.output_a.instance.family.name,
            "model_a": item.side_a_name,
            "model_b": item.side_b_name,
            "winner": f"model_{assignment.result['winner']}",
            "worker_id": assignment.worker_id,
            "left": assignment.presentation["left"],
            "is_gold": item.is_gold,
            "submitted_at": assignment.submitted_at,
            "duration_seconds": assignment.duration_seconds,
        }]
