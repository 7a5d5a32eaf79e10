"""What the project board shows, computed for one project (already checked to be the researcher's).

The stages are the instance statuses (``datasets_app.instance_status`` owns them); each stage's next
action is the step kind that acts on it (``stepruns.kinds``: each kind names its stage) or, for the
crowd's stages, the round type that moves it on (the item source that declares the stage).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q
from django.urls import reverse
from django.utils.translation import gettext as _

from annotation.models import Assignment, CollectionRound
from annotation.selectors import round_progress
from annotation.task_types import REGISTRY, round_type_for_stage, task_types_yielding
from datasets_app.models import Instance, InstructionFamily, ModelOutput, ReferenceCandidate, ReviewSet, Source
from evaluation.models import JudgedBattle
from projects.models import Release
from stepruns.kinds.registry import KINDS
from stepruns.models import StepRun

S = Instance.Status

RECENT_RUNS = 10
ROUNDS_SHOWN = 10


@dataclass
class StageAction:
    kind: str
    label: str
    action: str
    pending: int


@dataclass
class Stage:
    status: str
    label: str
    count: int
    actions: list[StageAction] = field(default_factory=list)
    crowd_action: str = ""
    crowd_kind: str = ""  # the round builder's choice for ``crowd_action``
    # The project's rounds of that type still taking work (draft or open, items not complete): the
    # stage's instances may already wait there, and a new round would find nothing to queue.
    crowd_rounds: list = field(default_factory=list)

    @property
    def headline(self) -> str:
        """e.g. "12 instances awaiting reference candidate"."""
        return f"{self.count} instance{'s' if self.count != 1 else ''} {self.label.lower()}"

    @property
    def next_actions(self) -> list[str]:
        return [action.action for action in self.actions if action.pending] or (
            [self.crowd_action] if self.crowd_action and self.count else [])

    @property
    def next_action(self) -> str:
        """e.g. "12 instances awaiting reference candidate: generate"."""
        verbs = self.next_actions
        return self.headline + (f": {', '.join(verbs)}" if verbs else "")


def instance_stages(project) -> list[Stage]:
    counts = dict(Instance.objects.filter(family__project=project).values_list("status")
                  .annotate(n=Count("pk")).values_list("status", "n"))
    taking_work = CollectionRound.objects.filter(
        project=project, status__in=(CollectionRound.Status.DRAFT, CollectionRound.Status.OPEN),
        items__completed_at__isnull=True).distinct().order_by("-created_at", "-id")
    stages = []
    for status, label in S.choices:
        crowd_action, crowd_kind = crowd_action_for(status)
        stage = Stage(status=status, label=label, count=counts.get(status, 0), crowd_action=crowd_action,
                      crowd_kind=crowd_kind)
        if crowd_action and stage.count:
            stage.crowd_rounds = list(taking_work.filter(task_type=crowd_kind.split(":")[0])[:ROUNDS_SHOWN])
        for name, kind in KINDS.items():
            if kind.stage == status:
                stage.actions.append(StageAction(kind=name, label=kind.label, action=kind.action,
                                                 pending=kind.pending(project=project)))
        stages.append(stage)
    return stages


def crowd_action_for(status: str) -> tuple[str, str]:
    """(what the board says, the round builder's ``kind``: task type and item source) for a stage the
    crowd moves on, as the item source declaring that stage words it; ("", "") for other stages."""
    found = round_type_for_stage(status)
    if found is None:
        return "", ""
    task_type, source = found
    return source.stage_action, f"{task_type.key}:{source.key}"


def review_set_counts(project) -> list[dict]:
    """Review sets per language: imported, generated, and those a ranker has scored."""
    rows = (ReviewSet.objects.filter(project=project).values("language")
            .annotate(total=Count("pk", distinct=True),
                      imported=Count("pk", filter=Q(source=Source.IMPORTED), distinct=True),
                      generated=Count("pk", filter=Q(source=Source.LLM), distinct=True),
                      scored=Count("pk", filter=Q(reviews__model_scores__isnull=False), distinct=True))
            .order_by("language"))
    return list(rows)


def models_on_board(project) -> list[dict]:
    """Models with outputs on the project's instances, and how many."""
    return list(ModelOutput.objects.filter(instance__family__project=project).values("model_name")
                .annotate(outputs=Count("pk")).order_by("model_name"))


def rounds_in_progress(project) -> list[dict]:
    rounds = CollectionRound.objects.filter(project=project, status=CollectionRound.Status.OPEN).order_by("-created_at", "-id")
    return [{"round": round, "progress": round_progress(round=round)} for round in rounds[:ROUNDS_SHOWN]]


def rounds_complete(project) -> list[dict]:
    """The project's complete rounds (every item has its judgments), most recently created first."""
    rounds = CollectionRound.objects.filter(project=project, status=CollectionRound.Status.COMPLETE).order_by(
        "-created_at", "-id")
    return [{"round": round, "progress": round_progress(round=round)} for round in rounds[:ROUNDS_SHOWN]]


def recent_runs(project):
    return StepRun.objects.filter(project=project).select_related("created_by")[:RECENT_RUNS]


def pipeline_board(project) -> dict:
    return {
        "stages": instance_stages(project),
        "review_sets": review_set_counts(project),
        "models": models_on_board(project),
        "rounds": rounds_in_progress(project),
        "complete_rounds": rounds_complete(project),
        "runs": recent_runs(project),
    }


# --- the first-steps checklist ----------------------------------------------------------------------


@dataclass
class FirstStep:
    key: str
    label: str
    done: bool
    url: str
    track: str  # "visit-bench" or "irr"


def _round_kind(task_type) -> str:
    """The round builder's ``kind`` for a task type: its first item source."""
    return f"{task_type.key}:{task_type.item_sources[0].key}" if task_type.item_sources else task_type.key


def _rounds_run(project, task_types) -> bool:
    """Whether the project has opened a round of one of these types (a draft or a cancelled one is not a step done)."""
    keys = [task_type.key for task_type in task_types]
    return CollectionRound.objects.filter(project=project, task_type__in=keys).exclude(
        status__in=(CollectionRound.Status.DRAFT, CollectionRound.Status.CANCELLED)).exists()


@dataclass
class Checklist:
    steps: list[FirstStep]

    @property
    def done(self) -> int:
        return sum(step.done for step in self.steps)

    @property
    def complete(self) -> bool:
        return self.done == len(self.steps)


def first_steps(project) -> Checklist:
    """The pipeline's steps in order, each ticked from the project's data, with the page that does it.
    Task types are found by what they do (the stage they move on, what they yield, what they target),
    step kinds by their stage: never by name."""
    slug = project.slug
    board = reverse("cockpit:project", args=[slug])
    new_round = reverse("cockpit:round-new", args=[slug])
    instances = Instance.objects.filter(family__project=project)
    steps: list[FirstStep] = []

    def add(key, label, done, url, track="visit-bench"):
        steps.append(FirstStep(key=key, label=label, done=bool(done), url=url, track=track))

    add("material", _("Import instances or add instruction families with their images"),
        InstructionFamily.objects.filter(project=project).exists(), f"{board}#upload-families")
    family_types = [task_type for _, task_type in REGISTRY.items() if "family" in task_type.target_fields]
    if family_types:
        add("instruction-round", _("Open an instruction-writing round"), _rounds_run(project, family_types)
            or instances.filter(source=Source.CROWD).exists(), f"{new_round}?kind={_round_kind(family_types[0])}")
    found = round_type_for_stage(S.AWAITING_CAPTION)
    if found:
        add("caption-round", _("Open a caption round"), _rounds_run(project, [found[0]]),
            f"{new_round}?kind={found[0].key}:{found[1].key}")
    reference_kinds = [name for name, kind in KINDS.items() if kind.stage == S.AWAITING_REFERENCE]
    if reference_kinds:
        add("references", _("Generate reference candidates with an LLM"),
            ReferenceCandidate.objects.filter(instance__family__project=project).exists(),
            f"{board}#start-{reference_kinds[0]}")
    found = round_type_for_stage(S.AWAITING_VERIFICATION)
    if found:
        add("verification-round", _("Open a verification round"), _rounds_run(project, [found[0]]),
            f"{new_round}?kind={found[0].key}:{found[1].key}")
    add("model-outputs", _("Add model outputs (upload predictions or generate them)"),
        ModelOutput.objects.filter(instance__family__project=project).exists(), f"{board}#upload-predictions")
    battle_types = task_types_yielding("battles")
    if battle_types:
        add("pairwise-round", _("Open a pairwise round"), _rounds_run(project, battle_types),
            f"{new_round}?kind={_round_kind(battle_types[0])}")
    add("results", _("Read the results"),
        Assignment.objects.counted().filter(round__project=project,
                                            round__task_type__in=[t.key for t in battle_types]).exists()
        or JudgedBattle.objects.filter(instance__family__project=project).exists(),
        reverse("cockpit:results", args=[slug]))
    add("release", _("Make a release"), Release.objects.filter(project=project).exists(),
        reverse("cockpit:releases", args=[slug]))
    add("review-sets", _("Import or generate IRR review sets"), ReviewSet.objects.filter(project=project).exists(),
        f"{board}#upload-review-sets", track="irr")
    ranking_types = task_types_yielding("rankings")
    if ranking_types:
        add("ranking-round", _("Open a ranking round"), _rounds_run(project, ranking_types),
            f"{new_round}?kind={_round_kind(ranking_types[0])}", track="irr")
    add("irr-report", _("Read the IRR report"),
        Assignment.objects.counted().filter(round__project=project,
                                            round__task_type__in=[t.key for t in ranking_types]).exists(),
        reverse("cockpit:irr", args=[slug]), track="irr")
    return Checklist(steps)
