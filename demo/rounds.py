"""Demo collection rounds for `make demo`: one open round of each task type, ready for local workers.

The rounds are built over the demo data of ``demo.data`` (created here if missing): its
family for instruction generation, its instance awaiting a caption, its LLM answer awaiting
verification, its model outputs and references for pairwise judgments, and its review sets.
"""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction

from annotation.models import CollectionRound
from annotation.services.rounds import add_items, create_round, open_round
from annotation.services.workers import get_or_create_local_worker
from datasets_app.models import AcceptedReference, Instance, InstructionFamily, ReferenceCandidate, ReviewSet
from demo.data import create_demo_data
from projects.services import unassigned_project

DEMO_PREFIX = "Demo: "


def _caption_targets(project) -> list[Instance]:
    return list(Instance.objects.filter(family__project=project, status=Instance.Status.AWAITING_CAPTION)
                .order_by("id")[:3])


def _verification_targets(project) -> list[ReferenceCandidate]:
    return list(ReferenceCandidate.objects.filter(instance__family__project=project, verifications__isnull=True)
                .order_by("id")[:3])


def _pairwise_targets(project) -> list[tuple]:
    """Every pair of the instance's model outputs and its accepted reference, for each demo instance
    with outputs: enough battles among several models for Elo and Bradley–Terry."""
    targets = []
    for instance in Instance.objects.filter(family__project=project, model_outputs__isnull=False).distinct() \
            .order_by("id"):
        sides = list(instance.model_outputs.order_by("model_name"))
        reference = AcceptedReference.objects.filter(instance=instance).first()
        for index, output in enumerate(sides):
            targets.extend((output, other) for other in sides[index + 1:])
            if reference is not None:
                targets.append((output, reference))
    return targets


def _review_sets(project, language: str) -> list[ReviewSet]:
    return [
        review_set
        for review_set in ReviewSet.objects.filter(project=project, language=language).order_by("id")[:5]
        if review_set.reviews.count() == ReviewSet.REVIEWS_PER_SET
    ]


@transaction.atomic
def create_demo_rounds(*, researcher=None, worker_users=(), project=None) -> dict[str, CollectionRound]:
    """One open round per task type (ranking in English and in Japanese) over the demo data of
    ``project`` (the project ``unassigned`` when none is given), and nothing of any other project;
    the given users become local workers. Calling it again returns the rounds made the first time."""
    project = project if project is not None else unassigned_project()
    group, _created = Group.objects.get_or_create(name=settings.ANNOTATION_WORKER_GROUP)
    for user in worker_users:
        user.groups.add(group)
        worker = get_or_create_local_worker(user=user)
        if not worker.languages:
            # The demo workers rank in both languages; real ones state what they speak.
            worker.languages = ["en", "ja"]
            worker.save(update_fields=["languages"])

    create_demo_data(project=project)
    family = InstructionFamily.objects.filter(project=project, seed_image_links__isnull=False).order_by("id").first()
    # round key, task type, title, language, workers per item, targets, estimated seconds per task (shown to
    # workers), and whether only speakers of the round's language may work on it (IRR: each language's
    # reviews are ranked by speakers of that language).
    plans = (
        ("instruction_generation", "instruction_generation", "Write a new instruction", "en", 2,
         lambda: [family], 240, False),
        ("caption", "caption", "Caption images for an instruction", "en", 1, lambda: _caption_targets(project), 150,
         False),
        ("verification", "verification", "Check answers", "en", 3, lambda: _verification_targets(project), 60, False),
        ("pairwise", "pairwise", "Which response is better?", "en", 5, lambda: _pairwise_targets(project), 45, False),
        ("ranking", "ranking", "Rank image reviews", "en", 3, lambda: _review_sets(project, "en"), 90, True),
        ("ranking_ja", "ranking", "画像レビューの順位付け", "ja", 3, lambda: _review_sets(project, "ja"), 90, True),
    )
    rounds = {}
    for key, task_type, title, language, workers_per_item, targets, estimate, language_matched in plans:
        name = DEMO_PREFIX + title
        existing = CollectionRound.objects.filter(project=project, name=name).first()
        if existing is not None:
            rounds[key] = existing
            continue
        round = create_round(
            name=name,
            project=project,
            task_type=task_type,
            created_by=researcher,
            language=language,
            workers_per_item=workers_per_item,
            reward_per_task=Decimal("0.50"),  # the target wage and time limit are the rounds' defaults
            estimated_seconds_per_task=estimate,
            qualification_rules={"language_matched": True} if language_matched else None,
        )
        add_items(round=round, targets=targets())
        rounds[key] = open_round(round=round)
    # Chain the VisIT-Bench stages as the task types declare them (``follow_up_type``): new instructions
    # feed the caption round, finished captions get an LLM reference whose check goes to the
    # verification round (docs/pipeline.md).
    for round in rounds.values():
        follow_up_type = round.task_type_handler.follow_up_type
        later = next((other for other in rounds.values()
                      if other.task_type == follow_up_type and other.language == round.language), None)
        if later is not None and round.follow_up_round_id is None:
            round.follow_up_round = later
            round.full_clean()
            round.save(update_fields=["follow_up_round"])
    return rounds
