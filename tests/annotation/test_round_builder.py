"""The round builder: item sources of every task type, pairwise samplers, balance, seeds, project scoping."""
from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest

from annotation import round_builder
from annotation.models import CollectionRound, WorkItem
from annotation.samplers import SAMPLERS, Candidates, get_sampler
from annotation.samplers.base import SamplerError
from annotation.services.rounds import add_items, create_round
from annotation.task_types.sources import BadItemSource
from datasets_app.models import Instance, Verification
from projects.services import create_project

from .factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_project_outputs,
    make_review_set,
)

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta", "gamma")


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner")


@pytest.fixture
def project(owner):
    return create_project(name="Builder", slug="builder", owner=owner)


@pytest.fixture
def other_project(owner):
    return create_project(name="Other", slug="other", owner=owner)


def family_of(project):
    return make_family(project=project)


def instances_with_outputs(project, *, count=3, models=MODELS, references=False):
    return make_project_outputs(project=project, instances=count, models=models, references=references)


def plan(project, source="model_outputs", task_type="pairwise", **params):
    return round_builder.plan_items(project=project, task_type=task_type, source=source, params=params)


# --- pairwise samplers --------------------------------------------------------------------------


def test_all_pairs_gives_every_pair_per_instance_and_balances_models(project):
    instances_with_outputs(project, count=4)
    result = plan(project, sampler="all_pairs", seed=1)
    assert len(result) == 4 * 3  # C(3, 2) pairs on each of 4 instances
    assert result.balance["per_model"] == {"alpha": 8, "beta": 8, "gamma": 8}
    assert set(result.balance["per_instance"].values()) == {3}
    pairs = Counter((spec.instance_id, frozenset(spec.models)) for spec in result.specs)
    assert max(pairs.values()) == 1
    # Side A is drawn, so no model sits on side A in every one of its pairs.
    first_sides = Counter(spec.models[0] for spec in result.specs)
    assert all(count < 8 for count in first_sides.values())


def test_uniform_draws_count_distinct_tuples(project):
    instances_with_outputs(project, count=5)
    result = plan(project, sampler="uniform", count=7, seed=3)
    assert len(result) == 7
    keys = [(spec.instance_id, frozenset(spec.models)) for spec in result.specs]
    assert len(set(keys)) == 7
    assert sum(result.balance["per_model"].values()) == 14


def test_uniform_is_uniform_over_tuples():
    """Pure sampler: every (instance, A, B) tuple is about equally likely across seeds."""
    candidates = [Candidates(1, ((1, "a"), (2, "b"), (3, "c"))), Candidates(2, ((4, "a"), (5, "b")))]
    sampler = get_sampler("uniform")
    counts = Counter()
    for seed in range(2000):
        (pair,) = sampler.pairs(candidates, rng=random.Random(seed), count=1)
        counts[(pair.instance_id, frozenset((pair.output_a, pair.output_b)))] += 1
    assert len(counts) == 4
    assert all(400 <= value <= 600 for value in counts.values()), counts  # 500 expected each


def test_uniform_refuses_more_tuples_than_exist(project):
    instances_with_outputs(project, count=2)
    with pytest.raises(SamplerError, match="only 6 distinct"):
        plan(project, sampler="uniform", count=7, seed=1)
    with pytest.raises(SamplerError, match="needs a count"):
        plan(project, sampler="uniform", seed=1)


def test_against_reference_pairs_each_model_with_the_reference(project, settings):
    instances = instances_with_outputs(project, count=3, references=True)
    instances_with_outputs(project, count=1)  # no reference: left out
    result = plan(project, sampler="vs_reference", seed=1)
    assert len(result) == 9
    reference = settings.ANNOTATION_REFERENCE_SIDE_NAME
    assert result.balance["per_model"] == {"alpha": 3, "beta": 3, "gamma": 3, reference: 9}
    assert set(result.balance["per_instance"]) == {instance.pk for instance in instances}


def test_every_sampler_is_registered_and_seeded_plans_repeat(project):
    instances_with_outputs(project, count=4, references=True)
    assert set(SAMPLERS) == {"all_pairs", "uniform", "vs_reference", "adaptive"}
    for name in SAMPLERS:
        extra = {"count": 5} if get_sampler(name).takes_count else {}
        if get_sampler(name).adaptive:
            extra["budget_judgments"] = 100
        first = plan(project, sampler=name, seed=42, **extra).as_dict()
        again = plan(project, sampler=name, seed=42, **extra).as_dict()
        assert first == again
    different = [plan(project, sampler="uniform", count=5, seed=seed).as_dict()["items"] for seed in range(5)]
    assert len({repr(items) for items in different}) > 1


def test_a_missing_seed_is_drawn_and_returned(project):
    instances_with_outputs(project, count=3)
    result = plan(project, sampler="uniform", count=4)
    assert isinstance(result.params["seed"], int)
    assert plan(project, sampler="uniform", count=4, seed=result.params["seed"]).as_dict()["items"] == \
        result.as_dict()["items"]


def test_models_and_instances_narrow_the_pairs(project):
    instances = instances_with_outputs(project, count=3)
    result = plan(project, sampler="all_pairs", models="alpha, gamma", instance_ids=[instances[0].pk], seed=1)
    assert len(result) == 1 and set(result.specs[0].models) == {"alpha", "gamma"}


def test_another_projects_outputs_never_enter(project, other_project):
    mine = instances_with_outputs(project, count=2)
    theirs = instances_with_outputs(other_project, count=2, models=("alpha", "beta", "delta"))
    result = plan(project, sampler="all_pairs", seed=1)
    assert {spec.instance_id for spec in result.specs} == {instance.pk for instance in mine}
    assert "delta" not in result.balance["per_model"]
    with pytest.raises(BadItemSource, match="no instance with id"):
        plan(project, sampler="all_pairs", instance_ids=[theirs[0].pk], seed=1)
    with pytest.raises(BadItemSource, match="no outputs of 'delta'"):
        plan(project, sampler="all_pairs", models=["delta"], seed=1)


@pytest.mark.parametrize("params, message", [
    ({"sampler": "best_of"}, "sampler"),
    ({"sampler": "all_pairs", "seed": -1}, "seed"),
    ({"sampler": "all_pairs", "seed": "abc"}, "seed"),
    ({"sampler": "all_pairs", "instance_ids": ["x"]}, "instance_ids"),
    ({"sampler": "all_pairs", "instance_ids": [True]}, "instance_ids"),
    ({"sampler": "all_pairs", "colour": "red"}, "unknown parameters"),
    ({"sampler": "uniform", "count": 0}, "count"),
])
def test_bad_params_are_refused_with_the_field_named(project, params, message):
    instances_with_outputs(project, count=2)
    with pytest.raises(BadItemSource, match=message):
        plan(project, **params)


def test_unknown_source_and_task_type_are_refused(project):
    with pytest.raises(BadItemSource, match="its sources: model_outputs"):
        plan(project, source="families")
    with pytest.raises(Exception, match="unknown task type"):
        plan(project, task_type="dance")


def test_no_pairs_is_a_clear_refusal(project):
    family = family_of(project)
    make_outputs(instance=make_instance(family=family), models=("solo",))
    with pytest.raises(BadItemSource, match="at least two models"):
        plan(project, sampler="all_pairs", seed=1)
    with pytest.raises(BadItemSource, match="accepted reference"):
        plan(project, sampler="vs_reference", seed=1)


# --- the other task types' sources ----------------------------------------------------------------


def test_families_give_n_items_per_family(project, other_project):
    families = [family_of(project) for _ in range(2)]
    family_of(other_project)
    result = plan(project, task_type="instruction_generation", source="families", per_family=3)
    assert len(result) == 6
    assert Counter(spec.target.pk for spec in result.specs) == {family.pk: 3 for family in families}
    assert result.balance == {"per_model": {}, "per_instance": {}}
    only_one = plan(project, task_type="instruction_generation", source="families", family_ids=[families[0].pk])
    assert [spec.target for spec in only_one.specs] == [families[0]]


def test_instances_awaiting_a_caption_skip_queued_ones_and_other_projects(project, other_project):
    family = family_of(project)
    waiting = [make_instance(family=family, captions=False) for _ in range(3)]
    make_instance(family=family, captions=True)  # awaiting verification: not a caption item
    make_instance(family=family_of(other_project), captions=False)
    queued = create_round(name="queued", task_type="caption", project=project)
    add_items(round=queued, targets=[waiting[0]])
    result = plan(project, task_type="caption", source="awaiting_caption")
    assert [spec.target for spec in result.specs] == waiting[1:]
    assert plan(project, task_type="caption", source="awaiting_caption", limit=1).specs[0].target == waiting[1]


def test_reference_candidates_without_a_verdict(project, other_project):
    family = family_of(project)
    fresh = make_candidate(instance=make_instance(family=family))
    decided = make_candidate(instance=make_instance(family=family))
    Verification.objects.create(candidate=decided, outcome=Verification.Outcome.CORRECT, is_aggregate=True)
    make_candidate(instance=make_instance(family=family_of(other_project)))
    result = plan(project, task_type="verification", source="reference_candidates")
    assert [spec.target for spec in result.specs] == [fresh]


def test_review_sets_of_the_round_language_only(project, other_project):
    english = [make_review_set(language="en", project=project) for _ in range(2)]
    japanese = make_review_set(language="ja", project=project)
    make_review_set(language="en", project=other_project)
    result = round_builder.plan_items(project=project, task_type="ranking", source="review_sets", params={},
                                      language="en")
    assert [spec.target for spec in result.specs] == english
    result = round_builder.plan_items(project=project, task_type="ranking", source="review_sets", params={},
                                      language="ja")
    assert [spec.target for spec in result.specs] == [japanese]


def test_an_empty_source_is_refused(project):
    with pytest.raises(BadItemSource, match="gives no items"):
        plan(project, task_type="caption", source="awaiting_caption")


# --- adding the planned items to a round -------------------------------------------------------------


def test_items_added_from_a_source_match_the_preview(project):
    instances_with_outputs(project, count=3)
    preview = plan(project, sampler="uniform", count=5, seed=9)
    round = create_round(name="r", task_type="pairwise", project=project)
    added = round_builder.add_items_from_source(round=round, source="model_outputs",
                                                params={"sampler": "uniform", "count": 5, "seed": 9})
    assert added.as_dict() == preview.as_dict()
    stored = [(item.output_a_id, item.output_b_id) for item in round.items.order_by("position")]
    assert stored == [(spec.target[0].pk, spec.target[1].pk) for spec in preview.specs]
    assert round_builder.round_balance(round=round) == preview.balance


def test_add_items_takes_only_the_rounds_project(project, other_project):
    theirs = instances_with_outputs(other_project, count=2)
    round = create_round(name="r", task_type="pairwise", project=project)
    with pytest.raises(BadItemSource):
        round_builder.add_items_from_source(round=round, source="model_outputs",
                                            params={"sampler": "all_pairs", "instance_ids": [theirs[0].pk]})
    assert not WorkItem.objects.exists()
    orphan = create_round(name="no project", task_type="pairwise")
    with pytest.raises(BadItemSource, match="belongs to none"):
        round_builder.add_items_from_source(round=orphan, source="model_outputs", params={})


def test_create_round_from_source_is_all_or_nothing(project, owner):
    instances_with_outputs(project, count=2)
    settings = {"name": "P", "task_type": "pairwise", "workers_per_item": 3, "reward_per_task": Decimal("0.25"),
                "budget_cap": Decimal("10")}
    round, created = round_builder.create_round_from_source(
        project=project, created_by=owner, settings=settings, source="model_outputs",
        params={"sampler": "all_pairs", "seed": 1})
    assert round.status == CollectionRound.Status.DRAFT and round.items.count() == len(created) == 6
    with pytest.raises(BadItemSource):
        round_builder.create_round_from_source(project=project, created_by=owner, settings={**settings, "name": "Q"},
                                               source="model_outputs", params={"sampler": "nope"})
    with pytest.raises(round_builder.BadRoundSettings, match="time_limit_seconds"):
        round_builder.create_round_from_source(project=project, created_by=owner,
                                               settings={**settings, "name": "R", "time_limit_seconds": 5},
                                               source="model_outputs", params={"sampler": "all_pairs"})
    assert list(CollectionRound.objects.values_list("name", flat=True)) == ["P"]


def test_plan_as_dict_names_targets_by_id(project):
    instances = instances_with_outputs(project, count=1, references=True)
    data = plan(project, sampler="vs_reference", seed=1).as_dict()
    assert data["summary"]["items"] == 3 and data["params"]["sampler"] == "vs_reference"
    assert data["items"][0]["targets"]["reference"] == instances[0].accepted_reference.pk
    assert data["balance"]["per_instance"] == {str(instances[0].pk): 3}
    assert Instance.objects.count() == 1


def test_gold_answers_mark_planned_items_by_number(project):
    instances_with_outputs(project, count=1, references=True)
    round = create_round(name="r", task_type="pairwise", project=project)
    round_builder.add_items_from_source(round=round, source="model_outputs", params={"sampler": "vs_reference"},
                                        gold_answers={"3": {"winner": "b"}})
    assert [(item.position, item.is_gold, item.gold_answer) for item in round.items.order_by("position")] == [
        (0, False, {}), (1, False, {}), (2, True, {"winner": "b"})]
    with pytest.raises(BadItemSource, match="no item 4"):
        round_builder.add_items_from_source(round=round, source="model_outputs", params={"sampler": "vs_reference"},
                                            gold_answers={"4": {"winner": "b"}})
    assert round.items.count() == 3
