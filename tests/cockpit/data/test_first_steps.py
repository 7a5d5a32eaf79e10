"""The first-steps checklist on the project board: the pipeline in order, each step ticked from the
project's data as it comes, each linking to the page that does it; folded once every step is done."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.task_types.ranking import shown_order
from cockpit.selectors import first_steps
from datasets_app.models import ReferenceCandidate
from projects.models import Release
from tests.annotation.factories import (
    make_family,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker,
)

pytestmark = pytest.mark.django_db

ORDER = ["material", "instruction-round", "caption-round", "references", "verification-round", "model-outputs",
         "pairwise-round", "results", "release", "review-sets", "ranking-round", "irr-report"]


def done(project) -> set[str]:
    return {step.key for step in first_steps(project).steps if step.done}


def board(client, project) -> str:
    return client.get(reverse("cockpit:project", args=[project.slug])).content.decode()


def test_the_checklist_follows_the_pipeline_and_ticks_itself_as_data_comes(client, researcher, project):
    client.force_login(researcher)
    checklist = first_steps(project)
    assert [step.key for step in checklist.steps] == ORDER and checklist.done == 0
    page = board(client, project)
    assert 'id="first-steps"' in page and "0 of 12 done." in page
    assert re.search(r'<details id="first-steps-list" open>', page)
    links = {step.key: step.url for step in checklist.steps}
    assert links["material"].endswith("#upload-families")
    assert links["caption-round"].endswith("?kind=caption:awaiting_caption")
    assert links["references"].endswith("#start-generate_references")
    assert links["results"] == reverse("cockpit:results", args=[project.slug])

    family = make_family(project=project)
    assert done(project) == {"material"}
    make_round(task_type="instruction_generation", targets=[family], project=project)
    instance = make_instance(family=family, captions=False)
    make_round(task_type="caption", targets=[instance], project=project)
    assert done(project) == {"material", "instruction-round", "caption-round"}
    candidate = ReferenceCandidate.objects.create(instance=instance, text="Three.", model_name="gpt-4")
    make_round(task_type="verification", targets=[candidate], project=project)
    assert {"references", "verification-round"} <= done(project)
    outputs = make_outputs(instance=instance)
    pairwise = make_round(task_type="pairwise", targets=[tuple(outputs)], project=project)
    assert {"model-outputs", "pairwise-round"} <= done(project) and "results" not in done(project)
    worker = make_worker()
    assignment = request_assignment(round=pairwise, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": "left"})
    assert "results" in done(project)
    Release.objects.create(project=project, name="visit-bench", version="1.0.0", directory="releases/x")
    assert done(project) == set(ORDER[:9])
    page = board(client, project)
    assert "9 of 12 done." in page and 'data-step="release" class="done"' in page
    assert 'data-step="review-sets" class="todo"' in page

    review_set = make_review_set(project=project)
    ranking = make_round(task_type="ranking", targets=[review_set], project=project)
    assert "irr-report" not in done(project)
    assignment = request_assignment(round=ranking, worker=worker)
    submit_assignment(assignment_id=assignment.pk, worker=worker,
                      data={"order": shown_order(assignment, sorted(assignment.presentation["review_order"]))})
    assert done(project) == set(ORDER) and first_steps(project).complete
    page = board(client, project)
    assert "12 of 12 done." in page and '<details id="first-steps-list">' in page


def test_a_draft_or_cancelled_round_is_not_a_step_done(project):
    family = make_family(project=project)
    make_round(task_type="instruction_generation", targets=[family], project=project, open=False)
    assert "instruction-round" not in done(project)


def test_another_projects_data_ticks_nothing(project, researcher):
    from projects.services import create_project

    other = create_project(name="Other", slug="other", owner=researcher)
    make_outputs(instance=make_instance(family=make_family(project=other)))
    make_review_set(project=other)
    assert done(project) == set()
