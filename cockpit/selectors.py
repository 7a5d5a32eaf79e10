"""What the project board shows, computed for one project (already checked to be the researcher's).

The stages are the instance statuses (``datasets_app.instance_status`` owns them); each stage's next
action is the step kind that acts on it (``stepruns.kinds``: each kind names its stage) or, for the
crowd's stages, the round type that moves it on (the item source that declares the stage).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q

from annotation.models import CollectionRound
from annotation.selectors import round_progress
from annotation.task_types import round_type_for_stage
from datasets_app.models import Instance, ModelOutput, ReviewSet, Source
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
    stages = []
    for status, label in S.choices:
        crowd_action, crowd_kind = crowd_action_for(status)
        stage = Stage(status=status, label=label, count=counts.get(status, 0), crowd_action=crowd_action,
                      crowd_kind=crowd_kind)
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
