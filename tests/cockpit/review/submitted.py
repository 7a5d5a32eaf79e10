"""Submitted work of each task type in a project, for the review-queue tests."""
from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.services.engine import request_assignment
from annotation.services.submissions import submit_assignment
from annotation.task_types.ranking import shown_order
from tests.annotation.factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_review_set,
    make_round,
    make_worker,
    png_bytes,
)

HOSTILE = '<script>alert("x")</script><b>bold</b>'
IMAGE_FIELDS = {"license": "CC-BY-4.0", "creator": "A. Photographer", "source_url": "https://openverse.org/image/1"}


def submit(round, data, *, worker=None, files=None):
    """A local worker takes the round's next item and submits ``data`` (a function of the assignment
    when it depends on what the page showed)."""
    worker = worker or make_worker()
    assignment = request_assignment(round=round, worker=worker)
    answers = data(assignment) if callable(data) else data
    return submit_assignment(assignment_id=assignment.pk, worker=worker, data=answers,
                                      files=files).assignment


def instruction_generation_submission(project, *, instruction=f"Which shape is on top? {HOSTILE}"):
    round = make_round(task_type="instruction_generation", targets=[make_family()], project=project)
    upload = SimpleUploadedFile("photo.png", png_bytes("blue"), content_type="image/png")
    return submit(round, {"instruction": instruction, **IMAGE_FIELDS}, files={"image_file": upload})


def caption_submission(project, *, caption=f"A red square. {HOSTILE}"):
    round = make_round(task_type="caption", targets=[make_instance(captions=False)], project=project)
    return submit(round, {"captions": [caption]})


def verification_submission(project, *, comment=f"The count is off. {HOSTILE}"):
    round = make_round(task_type="verification", targets=[make_candidate(text="Exactly three shapes.")],
                       project=project)
    return submit(round, {"outcome": "response_problem", "harmful": False, "comment": comment})


def pairwise_submission(project, *, worker=None, gold=False, choice="left", stored_images=False):
    outputs = tuple(make_outputs(instance=make_instance(stored_images=stored_images)))
    round = make_round(task_type="pairwise", targets=[outputs], project=project,
                       gold_answers={0: {"winner": "a"}} if gold else None)
    return submit(round, {"choice": choice}, worker=worker)


def ranking_submission(project):
    texts = [f"Review {rank}: calm lake {HOSTILE}" if rank == 3 else f"Review {rank}: calm lake."
             for rank in range(1, 6)]
    review_set = make_review_set(texts=texts)
    round = make_round(task_type="ranking", targets=[review_set], project=project)
    best_first = list(review_set.reviews.order_by("prompt_rank").values_list("pk", flat=True))
    return submit(round, lambda assignment: {"order": shown_order(assignment, best_first)})
