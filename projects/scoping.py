"""Which project each row of the researchers' data belongs to.

Every model of the apps that hold researchers' data declares here the lookup path from its rows to
their ``projects.Project`` (Django's ``__`` notation). A row may reach a project through several
paths (an instance's image and the instance itself); they must all name the same project, and the
first is never empty. The few models that belong to no project say why in ``CROSS_PROJECT``.
A new model in one of these apps belongs in one of the two tables; a test fails until it does.
"""
from __future__ import annotations

# The apps whose models are researchers' data (or the crowd and LLM records around it).
RESEARCHER_DATA_APPS = (
    "projects", "datasets_app", "annotation", "evaluation", "leaderboard", "llm", "stepruns", "quality",
    "providers", "mturk",
)

# "app_label.ModelName": (the path to the project, further paths that must agree when set)
PROJECT_PATHS: dict[str, tuple[str, ...]] = {
    "projects.Project": ("pk",),
    "projects.Membership": ("project",),
    "projects.Release": ("project",),
    "datasets_app.InstructionFamily": ("project",),
    "datasets_app.Image": ("project",),
    "datasets_app.FamilySeedImage": ("family__project", "image__project"),
    "datasets_app.Instance": ("family__project",),
    "datasets_app.InstanceImage": ("instance__family__project", "image__project"),
    "datasets_app.Caption": ("instance__family__project",),
    "datasets_app.ReferenceCandidate": ("instance__family__project",),
    "datasets_app.Verification": ("candidate__instance__family__project",),
    "datasets_app.AcceptedReference": ("instance__family__project", "candidate__instance__family__project"),
    "datasets_app.ModelOutput": ("instance__family__project",),
    "datasets_app.ReviewSet": ("project", "image__project"),
    "datasets_app.Review": ("review_set__project",),
    "annotation.Qualification": ("project",),
    "annotation.CollectionRound": ("project", "follow_up_round__project"),
    "annotation.WorkItem": (
        "round__project", "family__project", "instance__family__project", "candidate__instance__family__project",
        "output_a__instance__family__project", "output_b__instance__family__project",
        "reference__instance__family__project", "review_set__project",
    ),
    "annotation.Assignment": ("round__project", "item__round__project"),
    "annotation.ConsentDecision": ("round__project",),
    "annotation.ImageReport": ("item__round__project", "assignment__round__project"),
    "evaluation.ReviewScore": ("review__review_set__project",),
    "evaluation.JudgedBattle": ("instance__family__project",),
    "evaluation.ImportedPreference": ("instance__family__project",),
    "evaluation.StoredResult": ("project",),
    "evaluation.ResultsRefresh": ("project",),
    "leaderboard.SubmissionPolicy": ("project",),
    "leaderboard.SubmissionToken": ("project",),
    "leaderboard.Submission": ("project", "token__project", "step_run__project"),
    "stepruns.StepRun": ("project",),
    "quality.WorkerQuality": ("round__project",),
    "quality.RoundQuality": ("round__project",),
    "providers.Publication": ("round__project",),
    "providers.BonusPayment": ("assignment__round__project",),
    "mturk.HIT": ("publication__round__project", "item__round__project"),
}

# "app_label.ModelName": why its rows belong to no single project
CROSS_PROJECT: dict[str, str] = {
    "annotation.Worker": "a crowd worker's identity and languages; they work on any project's rounds, and what "
                         "they did for a project is on its assignments",
    "projects.ApiTokenName": "the name of a researcher's API token, which reaches every project of theirs",
    "llm.PromptTemplate": "the platform's versioned prompt wordings, the same for every project",
    "llm.LLMRun": "a budget of LLM calls; a project's spending is on its step runs, which name their run",
    "llm.LLMCall": "one request and its answer, which is also the response cache: it is keyed by the request "
                   "and never listed to researchers",
}
