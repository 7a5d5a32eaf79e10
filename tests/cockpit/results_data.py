"""Known crowd data in one project for the watch and results tests: a pairwise round with reference
pairs over two families, judged by three local workers at known times, one assignment still in flight,
and a ranking round of English and Japanese review sets with stored model scores."""
from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pandas as pd
from django.utils import timezone

from annotation.models import CollectionRound, Worker
from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.task_types.ranking import shown_order
from datasets_app.models import Instance
from evaluation.services import store_review_scores
from tests.annotation.factories import (
    make_family,
    make_instance,
    make_outputs,
    make_reference,
    make_review_set,
    make_round,
    make_worker,
)

MODELS = ("model-good", "model-bad")
FAMILIES = ("Counting", "Colours")
SECONDS_PER_TASK = (60, 90, 120)  # per worker: the median task takes 90 s
REWARD = Decimal("0.50")


@dataclass
class JudgedProject:
    pairwise: CollectionRound
    ranking: CollectionRound
    ranking_ja: CollectionRound
    workers: list[Worker]
    in_flight_worker: Worker


def _judge(item, rng: random.Random) -> str:
    """The side the worker prefers: the good model beats the bad one 80 % of the time, the reference
    beats the bad model always and the good model half of the time."""
    names = (item.side_a_name, item.side_b_name)
    if "model-bad" in names:
        other = "a" if names[1] == "model-bad" else "b"
        bad = "b" if other == "a" else "a"
        if "model-good" in names:
            return other if rng.random() < 0.8 else bad
        return other
    return "a" if rng.random() < 0.5 else "b"


def judged_project(project, *, verified_per_family=(2, 1)) -> JudgedProject:
    targets = []
    for family_name, verified in zip(FAMILIES, verified_per_family):
        family = make_family(name=f"{family_name} {project.slug}", project=project)
        for number in range(2):
            instance = make_instance(family=family)
            if number < verified:
                Instance.objects.filter(pk=instance.pk).update(status=Instance.Status.VERIFIED)
            good, bad = make_outputs(instance=instance, models=MODELS)
            reference = make_reference(instance=instance, text=f"Reference {instance.pk}.")
            targets += [(good, bad), (good, reference), (bad, reference)]
    pairwise = make_round(task_type="pairwise", targets=targets, workers_per_item=3, project=project,
                          reward_per_task=REWARD, budget_cap=Decimal("20.00"))
    workers = [make_worker() for _ in range(3)]
    rng = random.Random(11)
    start = timezone.now() - timedelta(hours=5)
    step = 0
    for number, (worker, seconds) in enumerate(zip(workers, SECONDS_PER_TASK)):
        # The last worker leaves the last item to someone else.
        for _ in range(len(targets) - (1 if number == 2 else 0)):
            taken = start + timedelta(minutes=7 * step)
            step += 1
            assignment = request_assignment(round=pairwise, worker=worker, now=taken)
            wanted = _judge(assignment.item, rng)
            choice = "left" if assignment.presentation["left"] == wanted else "right"
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice},
                                       now=taken + timedelta(seconds=seconds))
    in_flight_worker = make_worker()
    assert request_assignment(round=pairwise, worker=in_flight_worker) is not None

    review_sets = []
    rankings = []
    for language, count in (("en", 2), ("ja", 1)):
        sets = [make_review_set(language=language, project=project) for _ in range(count)]
        review_sets += sets
        rankings.append(make_round(task_type="ranking", targets=sets, workers_per_item=3, project=project,
                                   language=language))
        for number, worker in enumerate(workers):
            for _ in sets:
                assignment = request_assignment(round=rankings[-1], worker=worker)
                order = sorted(assignment.presentation["review_order"])  # prompt-rank order
                if number == 2:
                    order = [order[1], order[0], *order[2:]]  # the third worker swaps the top two
                submit_assignment(assignment_id=assignment.pk, worker=worker,
                                           data={"order": shown_order(assignment, order)})
    rows = [(review_set.pk, "model-m", review_set.language, review.pk, float(review.prompt_rank))
            for review_set in review_sets for review in review_set.reviews.all()]
    store_review_scores(frame=pd.DataFrame(rows, columns=["item_id", "model", "language", "review_id", "score"]),
                        ranker_kind="chat")
    pairwise.refresh_from_db()
    return JudgedProject(pairwise=pairwise, ranking=rankings[0], ranking_ja=rankings[1], workers=workers, in_flight_worker=in_flight_worker)


def yen_round(project, *, tasks=3, budget_cap=Decimal("1000"), items_left=0):
    """A pairwise round paying 30 JPY a task, with ``tasks`` tasks done by local workers in 40 s each
    (and ``items_left`` more items nobody did yet: the round is then still in progress)."""
    round = make_round(task_type="pairwise", targets=[tuple(make_outputs(instance=make_instance()))
                                                      for _ in range(tasks + items_left)],
                       project=project, reward_per_task=Decimal("30"), currency="JPY", budget_cap=budget_cap)
    start = timezone.now() - timedelta(minutes=10)
    for _ in range(tasks):
        worker = make_worker()
        assignment = request_assignment(round=round, worker=worker, now=start)
        submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"},
                                   now=start + timedelta(seconds=40))
    return round

