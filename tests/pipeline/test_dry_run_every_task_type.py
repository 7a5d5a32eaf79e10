"""``publish_round --dry-run`` on the local provider for a round of each of the five task types:
simulated workers answer through the task types and the real services; nothing is kept."""
from __future__ import annotations

import hashlib
import json
import re

import pytest
from django.core.management import call_command

from annotation.models import Assignment, WorkItem
from annotation.task_types import REGISTRY
from datasets_app.licenses import publishable_ids
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

    from annotation.services.engine import request_assignment
    from annotation.services.submissions import submit_assignment

    from ..annotation.factories import make_worker

    family = make_family(multi=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    worker = make_worker()
    assignment = request_assignment(round=round, worker=worker)
    answers = REGISTRY.get("instruction_generation").simulate(assignment=assignment, rng=Random(2), accuracy=1.0)
    outcome = submit_assignment(assignment_id=assignment.pk, worker=worker, data=answers)
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    images = instance.ordered_images()
    assert len(images) == 2 and all(image.file and (image.width, image.height) == (64, 48) for image in images)
    assert images[0].sha256 != images[1].sha256
    assert {image.license for image in images} <= set(publishable_ids())
    assert all(image.creator and image.source_url for image in images)


def test_mturk_dry_run_of_an_instruction_generation_round_hands_over_checksums(settings, capsys, monkeypatch):
    """MTurk receives the answers as stored here: an uploaded image is its stored checksum, never
    the file (which JSON cannot carry)."""
    from fakes.mturk import FakeMTurkServer

    settings.PROVIDERS_PUBLIC_BASE_URL = "https://crowdbench.example.org"
    round = make_round(task_type="instruction_generation", targets=[make_family(), make_family(multi=True)],
                       workers_per_item=2, open=False)
    handed_over = []
    submit = FakeMTurkServer.submit_assignment

    def recording_submit(fake, assignment_id, answers):
        handed_over.append(json.loads(answers["crowdbench_answers"]))
        return submit(fake, assignment_id, answers)

    monkeypatch.setattr(FakeMTurkServer, "submit_assignment", recording_submit)
    call_command("publish_round", str(round.pk), "--provider", "mturk", "--dry-run", "--seed", "4",
                 "--median-seconds", "120")
    out = capsys.readouterr().out
    assert "DRY RUN on mturk" in out and "tasks submitted: 4;" in out
    assert len(handed_over) == 4
    images = [image for answers in handed_over for image in answers["images"]]
    assert len(images) == 6  # one image for the single-image family, two for the other, twice each
    assert all(re.fullmatch(r"[0-9a-f]{64}", image["image_sha256"]) for image in images)
    assert not any(key.endswith("-file") for answers in handed_over for key in answers)
    assert not Instance.objects.exists()  # rolled back


def test_an_upload_handed_to_mturk_unsaved_is_named_by_its_content_hash():
    from django.core.files.uploadedfile import SimpleUploadedFile

    from providers.mturk.provider import encode_answers

    upload = SimpleUploadedFile("photo.png", b"image bytes")
    encoded = json.loads(encode_answers({"instruction": "Count the cats.", "images-0-file": upload}))
    assert encoded == {"instruction": "Count the cats.", "images-0-file": {
        "file_name": "photo.png", "sha256": hashlib.sha256(b"image bytes").hexdigest()}}
    assert upload.read() == b"image bytes"  # still readable for our own save
    with pytest.raises(TypeError, match="object cannot be handed to MTurk"):
        encode_answers({"when": object()})
