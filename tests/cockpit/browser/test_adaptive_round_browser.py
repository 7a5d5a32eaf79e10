"""In chromium: a researcher watches an adaptive pairwise round that simulated workers answer from a
known Bradley–Terry model; the goal's progress grows on the watch page until the round stops itself."""
import random
from decimal import Decimal

import pytest

from annotation import round_builder
from annotation.models import CollectionRound
from annotation.errors import RoundNotOpen
from annotation.services.engine import request_assignment
from annotation.services.rounds import open_round
from annotation.services.submissions import submit_assignment
from tests.annotation.factories import make_project_outputs, make_worker

from .conftest import log_in_researcher

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRUTH = {"alpha": 1500.0, "beta": 1100.0, "gamma": 700.0, "delta": 300.0}


def answer_one(round, worker, rng) -> bool:
    """One simulated judgment; False when the round hands out nothing (or has stopped)."""
    try:
        assignment = request_assignment(round=CollectionRound.objects.get(pk=round.pk), worker=worker)
    except RoundNotOpen:
        return False
    if assignment is None:
        return False
    item = assignment.item
    p_a = 1 / (1 + 10 ** ((TRUTH[item.side_b_name] - TRUTH[item.side_a_name]) / 400))
    winner = "a" if rng.random() < p_a else "b"
    choice = next(side for side in ("left", "right") if assignment.presentation[side] == winner)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})
    return True


def test_an_adaptive_round_runs_to_its_goal_and_the_watch_page_shows_it_stopping(page, researcher, project):
    make_project_outputs(project=project, instances=4, models=tuple(TRUTH))
    round, _plan = round_builder.create_round_from_source(
        project=project, created_by=researcher,
        settings={"name": "Adaptive round", "task_type": "pairwise", "reward_per_task": Decimal("0.10")},
        source="model_outputs", params={"sampler": "adaptive", "budget_judgments": 2000, "seed": 3})
    open_round(round=round)
    watch_url = f"/projects/{project.slug}/rounds/{round.pk}/watch/"
    log_in_researcher(page, researcher.username, watch_url)
    assert page.locator("#goal").is_visible()
    assert page.locator("#goal-progress").inner_text() == "no judgments yet"
    assert page.locator("#goal-stopped").count() == 0

    workers = [make_worker(f"sim-{n}") for n in range(2)]
    rng = random.Random(5)
    for _ in range(6):  # the first batch: every pair once
        assert answer_one(round, workers[0], rng)
    page.reload()
    progress = page.locator("#goal-progress").inner_text()
    assert progress.endswith("of 3 adjacent pairs separated") and not progress.startswith("3 of 3")
    assert "6 of at most 2000 judgments" in page.locator("#goal").inner_text()
    assert page.locator("#goal-stopped").count() == 0

    while any(answer_one(round, worker, rng) for worker in workers):
        pass
    page.reload()
    assert page.locator("#goal-progress").inner_text() == "3 of 3 adjacent pairs separated"
    assert page.locator("#goal-stopped").inner_text() == "Stopped: the goal is met."
    assert "Closed" in page.locator("p.muted").first.inner_text()
    assert page.js_errors == []
