"""Adaptive pairs: the round starts with every pair of models once and then asks for the pairs
whose judgments most shrink the uncertainty of its goal, as the judgments arrive, until the goal is
met or its budget of judgments is spent (docs/evaluation.md, "Active pair sampling"; #29).

The rule and the stopping test are ``stats.active_sampling`` (no Django). This module
keeps the round's side: its state (``CollectionRound.sampler_state``: the goal, the budget, the
models, the batches drawn and the last progress), and :func:`advance_round`, which reads the
round's counted judgments, refits, and either adds the next batch of items through the engine's
``add_items`` or stops the round through ``close_round``. Everything it decides is recomputed from
the stored judgments, under the round's row lock, so concurrent workers cannot make it draw a batch
twice and a restart loses nothing. The engine's guarantees are untouched: the items it adds are
ordinary items (k distinct workers each, no over-assignment, quality policies); gold items added
by the researcher are served as usual and left out of the fit.
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict
from itertools import combinations

import numpy as np

from .base import Pair, PairSampler, SamplerError

logger = logging.getLogger(__name__)

NAME = "adaptive"


def _model_pairs(names: list[str]) -> list[tuple[str, str]]:
    return list(combinations(names, 2))


def _draw_items(wanted: list[tuple[str, str]], outputs: dict[str, dict[int, int]], rng: np.random.Generator
                ) -> list[Pair]:
    """One item per wanted model pair: an instance both models answered, drawn at random, and which
    model is side A drawn too (the page randomises left and right again)."""
    drawn = []
    for name_a, name_b in wanted:
        shared = sorted(set(outputs[name_a]) & set(outputs[name_b]))
        if not shared:
            continue
        instance_id = shared[int(rng.integers(len(shared)))]
        if rng.random() < 0.5:
            name_a, name_b = name_b, name_a
        drawn.append(Pair(instance_id, outputs[name_a][instance_id], outputs[name_b][instance_id]))
    return drawn


def _outputs_by_model(instances) -> dict[str, dict[int, int]]:
    outputs: dict[str, dict[int, int]] = defaultdict(dict)
    for candidates in instances:
        for output_id, model_name in candidates.outputs:
            outputs[model_name][candidates.instance_id] = output_id
    return outputs


class AdaptivePairs(PairSampler):
    name = NAME
    label = "Adaptive: pairs chosen as judgments arrive, until a goal or a budget"
    adaptive = True

    def pairs(self, instances, *, rng, count):
        """The first batch: every pair of models once (the fit needs every pair met)."""
        outputs = _outputs_by_model(instances)
        names = sorted(outputs)
        if len(names) < 2:
            return []
        linked = [pair for pair in _model_pairs(names) if set(outputs[pair[0]]) & set(outputs[pair[1]])]
        if len(linked) < len(names) * (len(names) - 1) // 2:
            missing = len(names) * (len(names) - 1) // 2 - len(linked)
            raise SamplerError(f"the adaptive sampler needs every two models to have answered a common instance; "
                               f"{missing} pairs of models have none")
        return _draw_items(linked, outputs, np.random.default_rng(rng.randrange(2**32)))

    def start(self, *, round, params: dict, items: int) -> None:
        """Keep the goal, the budget and the models on the round (after its first batch was added)."""
        from stats.active_sampling import Goal

        if round.sampler_state:
            raise SamplerError("this round already runs an adaptive sampler; add other items with another sampler")
        goal = Goal(kind=params.get("goal") or "adjacent", level=float(params.get("goal_level") or 0.95),
                    width=params.get("goal_width"), k=params.get("goal_k"))
        budget = params.get("budget_judgments")
        if not budget:
            raise SamplerError("the adaptive sampler needs a budget of judgments (budget_judgments)")
        if items * round.workers_per_item > budget:
            raise SamplerError(f"the first batch alone ({items} pairs × {round.workers_per_item} workers) "
                               f"exceeds the budget of {budget} judgments")
        models = sorted({name for item in round.items.filter(is_gold=False)
                         for name in (item.side_a_name, item.side_b_name)})
        if goal.kind == "top_k" and goal.k >= len(models):
            raise SamplerError(f"the top-{goal.k} goal needs more than {goal.k} models; the round has {len(models)}")
        round.sampler_state = {
            "sampler": NAME, "goal": goal.to_dict(), "budget_judgments": int(budget), "models": models,
            "instance_ids": list(params.get("instance_ids") or []), "seed": int(params.get("seed") or 0),
            "exploration": float(params.get("exploration") or 0.1), "batches": 1, "issued_judgments":
            items * round.workers_per_item, "judgments": 0, "progress": None, "stopped": None,
        }
        round.save(update_fields=["sampler_state"])

    def on_item_completed(self, item) -> None:
        """After the submitting transaction commits: refit and add or stop (its own transaction, so a
        failure here never undoes a worker's submission; the next completion tries again)."""
        from django.db import transaction

        round_id = item.round_id
        # robust: an error here is logged, never the worker's (already stored) submission's failure.
        transaction.on_commit(lambda: advance_round(round_id=round_id), robust=True)


def _win_matrix(round, models: list[str]) -> tuple[np.ndarray, int]:
    """Counted judgments of the round's non-gold items as a win matrix over ``models``."""
    from django.db.models import Count

    from annotation.models import Assignment

    index = {name: i for i, name in enumerate(models)}
    wins = np.zeros((len(models), len(models)))
    rows = (Assignment.objects.counted().filter(round=round, item__is_gold=False)
            .values_list("item__side_a_name", "item__side_b_name", "result__winner")
            .annotate(n=Count("pk")).order_by())
    judgments = 0
    for side_a, side_b, winner, n in rows:
        if side_a not in index or side_b not in index or winner not in ("a", "b"):
            continue
        winner_name, loser_name = (side_a, side_b) if winner == "a" else (side_b, side_a)
        wins[index[winner_name], index[loser_name]] += n
        judgments += n
    return wins, judgments


def _outputs_of(round, state) -> dict[str, dict[int, int]]:
    from datasets_app.models import ModelOutput

    outputs = ModelOutput.objects.filter(instance__family__project=round.project_id, model_name__in=state["models"])
    if state["instance_ids"]:
        outputs = outputs.filter(instance_id__in=state["instance_ids"])
    by_model: dict[str, dict[int, int]] = defaultdict(dict)
    for output_id, instance_id, model_name in outputs.order_by("pk").values_list("pk", "instance_id", "model_name"):
        by_model[model_name].setdefault(instance_id, output_id)
    return by_model


def advance_round(*, round_id: int) -> dict | None:
    """Refit the adaptive round's judgments and move it on: stop it when its goal is met or its budget
    spent, add the next batch when its open items run low. Idempotent; returns the state (None for a
    round that is not adaptive)."""
    from django.db import transaction

    from annotation.services.rounds import ACTIVE_STATUSES, add_items, close_round
    from annotation.models import CollectionRound
    from datasets_app.models import ModelOutput
    from stats.active_sampling import Goal, batch_size, choose_pairs, fit, progress

    with transaction.atomic():
        round = CollectionRound.objects.select_for_update().get(pk=round_id)
        state = dict(round.sampler_state or {})
        if state.get("sampler") != NAME:
            return None
        if state["stopped"] or round.status not in ACTIVE_STATUSES:
            return state
        models, goal, k = state["models"], Goal.from_dict(state["goal"]), round.workers_per_item
        wins, judgments = _win_matrix(round, models)
        estimate = fit(wins)
        reached = progress(goal, estimate)
        state["judgments"], state["progress"] = judgments, reached.to_dict()
        room = state["budget_judgments"] - state["issued_judgments"]
        if reached.met and (wins + wins.T)[np.triu_indices(len(models), 1)].min() > 0:
            state["stopped"] = "goal met"
        elif judgments >= state["budget_judgments"] or (room < k and not _open_items(round).exists()):
            state["stopped"] = "budget spent"
        if state["stopped"]:
            round.sampler_state = state
            round.save(update_fields=["sampler_state"])
            close_round(round=round)
            logger.info("adaptive round %s stopped (%s) after %s judgments: %s", round_id, state["stopped"],
                        judgments, reached.describe())
            return state
        wanted = math.ceil(batch_size(judgments, models=len(models)) / k)
        open_items = _open_items(round).count()
        if open_items * 2 <= wanted and room >= k:
            count = min(wanted - open_items, room // k)
            rng = np.random.default_rng([state["seed"], state["batches"]])
            chosen = choose_pairs(wins, goal, count=count, rng=rng, exploration=state["exploration"],
                                  estimate=estimate)
            pairs = _draw_items([(models[i], models[j]) for i, j in chosen], _outputs_of(round, state), rng)
            by_id = ModelOutput.objects.in_bulk([id for pair in pairs for id in (pair.output_a, pair.output_b)])
            add_items(round=round, targets=[(by_id[pair.output_a], by_id[pair.output_b]) for pair in pairs])
            state["batches"] += 1
            state["issued_judgments"] += len(pairs) * k
        round.sampler_state = state
        round.save(update_fields=["sampler_state"])
        return state


def _open_items(round):
    return round.items.filter(is_gold=False, completed_at__isnull=True)
