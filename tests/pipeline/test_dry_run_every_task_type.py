"""``publish_round --dry-run`` on the local provider for a round of each of the five task types:
simulated workers answer through the task types and the real services; nothing is kept."""
from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from annotation.models import Assignment, WorkItem
from annotation.task_types import REGISTRY
from datasets_app.models import Caption, Image, Instance, Verification

from ..annotation.factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
)

pytestmark = pytest.mark.django_db

TARGETS = {
    "instruction_generation": lambda: [make_family(), make_family(multi=True)],
    "caption": lambda: [make_instance(captions=False), make_instance(images=2, captions=False)],
    "verification": lambda: [make_candidate(), make_candidate()],
    "pairwise": lambda: [tuple(make_outputs(instance=make_instance())) for _ in range(2)],
    "ranking": lambda: [make_review_set(), make_review_set()],
}


def test_every_registered_type_has_a_dry_run_case():
    assert set(TARGETS) == set(REGISTRY)


@pytest.mark.parametrize("task_type", sorted(TARGETS))
def test_publish_round_dry_run_on_the_local_provider(task_type, settings, capsys):
    settings.PROVIDERS_PUBLIC_BASE_URL = "https://crowdbench.example.org"
    round = make_round(task_type=task_type, targets=TARGETS[task_type](), workers_per_item=2, open=False)
    before = {model: model.objects.count() for model in (Instance, Image, Caption, Verification, Assignment)}
    call_command("publish_round", str(round.pk), "--provider", "local", "--dry-run", "--seed", "4",
                 "--median-seconds", "120")
    out = capsys.readouterr().out
    assert "DRY RUN on local" in out
    assert "tasks submitted: 4;" in out  # two items, two simulated workers each
    assert "approved 4" in out
    # Rolled back: no assignment, no new instance, caption or verdict, items still open.
    assert {model: model.objects.count() for model in before} == before
    assert not WorkItem.objects.filter(round=round, completed_at__isnull=False).exists()


def test_a_simulated_instruction_generation_answer_is_a_valid_upload():
    from random import Random

    from annotation import services

    from ..annotation.factories import make_worker

    family = make_family(multi=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    worker = make_worker()
    assignment = services.request_assignment(round=round, worker=worker)
    answers = REGISTRY.get("instruction_generation").simulate(assignment=assignment, rng=Random(2), accuracy=1.0)
    outcome = services.submit_assignment(assignment_id=assignment.pk, worker=worker, data=answers)
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    images = instance.ordered_images()
    assert len(images) == 2 and all(image.file and (image.width, image.height) == (64, 48) for image in images)
    assert images[0].sha256 != images[1].sha256
    assert {image.license for image in images} <= set(django_settings.ANNOTATION_PERMISSIVE_LICENSES)
    assert all(image.creator and image.source_url for image in images)
