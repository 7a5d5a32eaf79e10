"""The adaptive pairwise sampler through the real engine: first batch, state, batches as judgments
arrive, stopping on its goal or its budget, gold left out of the fit, and the watch's goal line."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from annotation import round_builder
from annotation.models import Assignment, CollectionRound
from annotation.errors import RoundNotOpen
from annotation.services.engine import request_assignment
from annotation.services.rounds import open_round
from annotation.services.submissions import submit_assignment
from annotation.samplers.adaptive import advance_round
from annotation.samplers.base import SamplerError
from annotation.task_types.sources import BadItemSource
from annotation.watch import round_watch
from projects.services import create_project

from .factories import make_project_outputs, make_worker

# on_commit hooks move the round on: they only run in real transactions.
pytestmark = pytest.mark.django_db(transaction=True)

# Far apart: adjacent models are told apart after a few dozen judgments each.
TRUTH = {"alpha": 1500.0, "beta": 1100.0, "gamma": 700.0, "delta": 300.0}


def win_probability(model_a: str, model_b: str) -> float:
    return 1 / (1 + 10 ** ((TRUTH[model_b] - TRUTH[model_a]) / 400))


def bradley_terry_answer(rng: random.Random):
    def answer(worker, assignment):
        item = assignment.item
        winner = "a" if rng.random() < win_probability(item.side_a_name, item.side_b_name) else "b"
        return {"choice": next(side for side in ("left", "right") if assignment.presentation[side] == winner)}
    return answer


@pytest.fixture
def project(django_user_model, settings):
    owner = django_user_model.objects.create_user(username="owner")
    owner.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
    project = create_project(name="Adaptive", slug="adaptive", owner=owner)
    make_project_outputs(project=project, instances=6, models=tuple(TRUTH))
    return project


def adaptive_round(project, *, budget=3000, workers_per_item=1, gold_answers=None, **params):
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=None, source="model_outputs", gold_answers=gold_answers,
        settings={"name": "adaptive", "task_type": "pairwise", "workers_per_item": workers_per_item},
        params={"sampler": "adaptive", "budget_judgments": budget, "seed": 7, **params})
    return open_round(round=round)


def work_until_none(round, workers, answer) -> int:
    """Workers take turns, one task each, until none is handed out; returns the judgments submitted."""
    submitted = 0
    while True:
        progressed = False
        for worker in workers:
            try:
                assignment = request_assignment(round=CollectionRound.objects.get(pk=round.pk), worker=worker)
            except RoundNotOpen:  # stopped by its sampler
                return submitted
            if assignment is None:
                continue
            submit_assignment(assignment_id=assignment.pk, worker=worker, data=answer(worker, assignment))
            submitted += 1
            progressed = True
        if not progressed:
            return submitted


def test_the_first_batch_is_every_pair_of_models_once_and_the_state_is_kept(project):
    round = adaptive_round(project, goal="top_k", goal_k=1)
    pairs = Counter(frozenset((a, b)) for a, b in round.items.values_list("side_a_name", "side_b_name"))
    assert len(pairs) == 6 and set(pairs.values()) == {1}
    state = round.sampler_state
    assert state["sampler"] == "adaptive" and state["models"] == sorted(TRUTH)
    assert state["goal"] == {"kind": "top_k", "level": 0.95, "width": None, "k": 1}
    assert state["budget_judgments"] == 3000 and state["issued_judgments"] == 6 and state["stopped"] is None


@pytest.mark.parametrize("params, message", [
    ({}, "budget_judgments: The adaptive sampler needs a budget"),
    ({"budget_judgments": 100, "goal": "width"}, "goal_width: The width goal needs W"),
    ({"budget_judgments": 100, "goal": "top_k"}, "goal_k: The top-k goal needs k"),
])
def test_refused_parameters_name_the_field(project, params, message):
    with pytest.raises(BadItemSource, match=message):
        round_builder.plan_items(project=project, task_type="pairwise", source="model_outputs",
                                 params={"sampler": "adaptive", **params})


def test_a_first_batch_beyond_the_budget_is_refused_and_nothing_is_kept(project):
    with pytest.raises(SamplerError, match="exceeds the budget of 10 judgments"):
        adaptive_round(project, budget=10, workers_per_item=2)
    assert not CollectionRound.objects.exists()


def test_the_round_runs_to_its_goal_and_closes_itself(project):
    round = adaptive_round(project, workers_per_item=2)
    workers = [make_worker(f"w{n}") for n in range(3)]
    submitted = work_until_none(round, workers, bradley_terry_answer(random.Random(1)))
    round.refresh_from_db()
    state = round.sampler_state
    assert round.status == CollectionRound.Status.CLOSED
    assert state["stopped"] == "goal met"
    assert state["progress"]["text"] == "3 of 3 adjacent pairs separated" and state["progress"]["met"]
    assert state["batches"] > 1  # pairs were added as judgments arrived
    assert state["judgments"] == submitted < state["budget_judgments"]
    # The engine's guarantees: each item has at most k judgments, each from a distinct worker.
    per_item = Counter(round.assignments.values_list("item_id", flat=True))
    assert max(per_item.values()) <= 2
    assert round.assignments.values("item_id", "worker_id").distinct().count() == round.assignments.count()
    assert state["issued_judgments"] == round.items.count() * 2
    watch = round_watch(round=round)["goal"]
    assert watch["text"] == "3 of 3 adjacent pairs separated" and watch["stopped"] == "goal met"
    # Stopped rounds stay stopped: advancing again changes nothing.
    assert advance_round(round_id=round.pk) == state


def test_the_budget_stops_the_round_before_the_goal(project):
    # Equal models can never be separated: only the budget ends the round.
    round = adaptive_round(project, budget=40, goal="width", goal_width=5)
    workers = [make_worker(f"w{n}") for n in range(2)]
    submitted = work_until_none(round, workers, bradley_terry_answer(random.Random(2)))
    round.refresh_from_db()
    assert round.sampler_state["stopped"] == "budget spent"
    assert submitted == round.sampler_state["judgments"] <= 40
    assert round.items.count() <= 40
    assert round.status == CollectionRound.Status.CLOSED


def test_advancing_is_idempotent_and_resumes_from_the_stored_judgments(project):
    round = adaptive_round(project, budget=500)
    worker = make_worker("w")
    answer = bradley_terry_answer(random.Random(3))
    for _ in range(6):  # the first batch, answered
        assignment = request_assignment(round=round, worker=worker)
        submit_assignment(assignment_id=assignment.pk, worker=worker, data=answer(worker, assignment))
    round.refresh_from_db()
    items = round.items.count()
    assert items > 6 and round.sampler_state["judgments"] == 6
    # As after a restart: the state is read back and nothing is drawn twice while items are open.
    for _ in range(3):
        again = advance_round(round_id=round.pk)
    assert CollectionRound.objects.get(pk=round.pk).items.count() == items
    assert again["judgments"] == 6 and again["batches"] == round.sampler_state["batches"]


def test_gold_items_are_served_but_left_out_of_the_fit(project):
    round = adaptive_round(project, budget=200, gold_answers={"1": {"winner": "a"}})
    gold = round.items.get(is_gold=True)
    worker = make_worker("w")
    submitted = work_until_none(round, [worker], bradley_terry_answer(random.Random(4)))
    round.refresh_from_db()
    assert Assignment.objects.filter(round=round, item=gold).count() == 1
    assert round.sampler_state["judgments"] == submitted - 1


def test_the_watch_page_shows_the_goal_and_its_progress(project, client, django_user_model):
    round = adaptive_round(project)
    watch = round_watch(round=round)["goal"]
    assert watch["text"] is None and watch["budget_judgments"] == 3000
    advance_round(round_id=round.pk)
    round.refresh_from_db()
    watch = round_watch(round=round)["goal"]
    assert watch["goal"] == "separate adjacent ranks at 95 %"
    assert watch["text"] == "0 of 3 adjacent pairs separated" and watch["stopped"] is None
    client.force_login(django_user_model.objects.get(username="owner"))
    html = client.get(reverse("cockpit:round-watch", args=[project.slug, round.pk])).content.decode()
    assert "0 of 3 adjacent pairs separated" in html and "0 of at most 3000 judgments" in html


def test_a_drafts_adaptive_items_are_replaced_with_a_new_goal_and_budget(project):
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=None, source="model_outputs",
        settings={"name": "adaptive", "task_type": "pairwise", "workers_per_item": 1},
        params={"sampler": "adaptive", "budget_judgments": 3000, "seed": 7})
    edited, _plan = round_builder.edit_draft(
        round=round, settings={}, source="model_outputs",
        params={"sampler": "adaptive", "budget_judgments": 500, "seed": 7, "goal": "top_k", "goal_k": 1})
    edited.refresh_from_db()
    assert edited.sampler_state["budget_judgments"] == 500 and edited.sampler_state["goal"]["kind"] == "top_k"
    assert edited.items.count() == 6
