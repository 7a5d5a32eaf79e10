"""Each task type: payload validation, effects on the benchmark data, aggregation, and the selectors."""
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation import selectors
from annotation.errors import AssignmentNotFound, ConflictingResubmission, InvalidSubmission, RoundNotOpen
from annotation.models import Assignment
from annotation.services import submissions
from annotation.services.engine import request_assignment
from annotation.services.rounds import close_round
from annotation.services.submissions import submit_assignment
from annotation.task_types import REGISTRY
from annotation.task_types.ranking import shown_order
from datasets_app.models import AcceptedReference, Caption, Image, Instance, Source, Verification

from .factories import (
    make_candidate,
    make_family,
    make_instance,
    make_outputs,
    make_reference,
    make_review_set,
    make_round,
    make_worker,
    png_bytes,
)

pytestmark = pytest.mark.django_db


def take(round, worker=None):
    worker = worker or make_worker()
    return worker, request_assignment(round=round, worker=worker)


def submit(worker, assignment, data, files=None):
    return submit_assignment(assignment_id=assignment.pk, worker=worker, data=data, files=files)


def test_registry_has_the_five_types():
    assert set(REGISTRY) == {"instruction_generation", "caption", "verification", "pairwise", "ranking"}
    for _, task_type in REGISTRY.items():
        assert task_type.template_name.startswith("annotation/tasks/")


# --- instruction generation ---------------------------------------------------------------------

IMAGE_FIELDS = {"license": "CC-BY-4.0", "creator": "A. Photographer", "source_url": "https://openverse.org/image/1"}


def test_instruction_generation_with_an_uploaded_image_creates_a_crowd_instance():
    family = make_family()
    round = make_round(task_type="instruction_generation", targets=[family])
    worker, assignment = take(round)
    upload = SimpleUploadedFile("photo.png", png_bytes("blue"), content_type="image/png")
    outcome = submit(worker, assignment, {"instruction": "What colour is it?", **IMAGE_FIELDS}, {"image_file": upload})
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    assert (instance.source, instance.status, instance.family) == (Source.CROWD, Instance.Status.AWAITING_CAPTION, family)
    assert instance.created_by == worker.user
    [image] = instance.ordered_images()
    assert (image.license, image.creator, image.width, image.height) == ("CC-BY-4.0", "A. Photographer", 64, 48)
    assert outcome.assignment.payload["images"][0]["image_format"] == "PNG"
    assert "_image_content" not in outcome.assignment.payload


def test_instruction_generation_with_an_image_url():
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    worker, assignment = take(round)
    outcome = submit(worker, assignment, {"instruction": "Count them.", "image_url": "https://x.org/a.jpg", **IMAGE_FIELDS})
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    assert instance.ordered_images()[0].url == "https://x.org/a.jpg"


@pytest.mark.parametrize(
    "data, file_bytes, message",
    [
        ({"instruction": "", "image_url": "https://x.org/a.jpg", **IMAGE_FIELDS}, None, "instruction is empty"),
        ({"instruction": "Q?", **IMAGE_FIELDS}, None, "exactly one"),
        ({"instruction": "Q?", "image_url": "https://x.org/a.jpg", **IMAGE_FIELDS}, png_bytes(), "exactly one"),
        ({"instruction": "Q?", **IMAGE_FIELDS}, b"GIF89a not really", "not a readable image"),
        ({"instruction": "Q?", "image_url": "javascript:alert(1)", **IMAGE_FIELDS}, None, "not a valid"),
        ({"instruction": "Q?", "image_url": "https://x.org/a.jpg", **IMAGE_FIELDS, "license": "All rights reserved"}, None, "not accepted"),
    ],
)
def test_instruction_generation_refuses_bad_submissions(data, file_bytes, message):
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    worker, assignment = take(round)
    files = {"image_file": SimpleUploadedFile("f.png", file_bytes)} if file_bytes is not None else {}
    before = (Instance.objects.count(), Image.objects.count())
    with pytest.raises(InvalidSubmission, match=message):
        submit(worker, assignment, data, files)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and assignment.payload is None
    assert (Instance.objects.count(), Image.objects.count()) == before


def test_instruction_generation_refuses_an_existing_instance():
    family = make_family()
    round = make_round(task_type="instruction_generation", targets=[family], workers_per_item=2)
    data = {"instruction": "Same", "image_url": "https://x.org/same.jpg", **IMAGE_FIELDS}
    first, a = take(round)
    submit(first, a, data)
    second, b = take(round)
    with pytest.raises(InvalidSubmission, match="already exists"):
        submit(second, b, data)
    b.refresh_from_db()
    assert b.status == Assignment.Status.ASSIGNED


def image_row(index, **fields):
    """The indexed fields of image ``index`` (images-<index>-…), license, creator and source URL included."""
    values = {**IMAGE_FIELDS, **fields}
    return {f"images-{index}-{name}": value for name, value in values.items()}


def image_upload(index, content, name="photo.png"):
    return {f"images-{index}-file": SimpleUploadedFile(name, content, content_type="image/png")}


def test_multi_image_family_takes_two_uploads_in_order_and_a_repeat_is_stored_once():
    family = make_family(multi=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    worker, assignment = take(round)
    data = {"instruction": "What changed between the two pictures?",
            **image_row(0, creator="Before Photographer"), **image_row(1, license="CC0-1.0")}
    before, after = png_bytes("blue", size=(30, 20)), png_bytes("green", size=(50, 40))

    def files():
        return {**image_upload(0, before), **image_upload(1, after)}

    outcome = submit(worker, assignment, data, files())
    assert outcome.created
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    first, second = instance.ordered_images()
    assert (first.width, first.height, first.creator, first.license) == (30, 20, "Before Photographer", "CC-BY-4.0")
    assert (second.width, second.height, second.license) == (50, 40, "CC0-1.0")
    assert outcome.assignment.result["image_ids"] == [first.pk, second.pk]
    assert [entry["image_width"] for entry in outcome.assignment.payload["images"]] == [30, 50]
    assert not any(key.startswith("_") for key in outcome.assignment.payload)

    repeat = submit(worker, assignment, data, files())
    assert not repeat.created
    assert (Instance.objects.count(), instance.images.count()) == (1, 2)
    swapped = {**image_upload(0, after), **image_upload(1, before)}
    with pytest.raises(ConflictingResubmission):
        submit(worker, assignment, data, swapped)


def test_multi_image_family_mixes_an_image_url_and_an_upload():
    family = make_family(multi=True)
    round = make_round(task_type="instruction_generation", targets=[family])
    worker, assignment = take(round)
    data = {"instruction": "Compare them.", **image_row(0, url="https://x.org/before.jpg"), **image_row(1, url="")}
    outcome = submit(worker, assignment, data, image_upload(1, png_bytes("red", size=(33, 22))))
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    first, second = instance.ordered_images()
    assert first.url == "https://x.org/before.jpg" and not first.file
    assert (second.url, second.width, second.height) == ("", 33, 22)


def test_image_rows_are_ordered_by_their_index_not_by_field_order():
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True)])
    worker, assignment = take(round)
    data = {"instruction": "Order?", **image_row(7, url="https://x.org/later.jpg"), **image_row(3, url="https://x.org/earlier.jpg")}
    outcome = submit(worker, assignment, data)
    instance = Instance.objects.get(pk=outcome.assignment.result["instance_id"])
    assert [image.url for image in instance.ordered_images()] == ["https://x.org/earlier.jpg", "https://x.org/later.jpg"]


def too_many_rows():
    rows = {}
    for index in range(11):
        rows.update(image_row(index, url=f"https://x.org/{index}.jpg"))
    return rows


@pytest.mark.parametrize(
    "multi, data, uploads, message",
    [
        (True, {**image_row(0, url="https://x.org/a.jpg")}, {}, "needs at least 2 images; the submission has 1"),
        (True, {"image_url": "https://x.org/a.jpg", **IMAGE_FIELDS}, {}, "needs at least 2 images; the submission has 1"),
        (True, dict(IMAGE_FIELDS), {}, "needs at least 2 images; the submission has 0"),
        (True, too_many_rows(), {}, "At most 10 images"),
        (False, {**image_row(0, url="https://x.org/a.jpg"), **image_row(1, url="https://x.org/b.jpg")}, {},
         "takes exactly one image; the submission has 2"),
        (True, {**image_row(0, url="https://x.org/a.jpg"), **image_row(1, url="https://x.org/b.jpg", license="All rights reserved")},
         {}, "^Image 2: The license All rights reserved is not accepted"),
        (True, {**image_row(0, url="https://x.org/a.jpg"), **image_row(1, url="")}, {}, "^Image 2: Upload an image file or give an image URL"),
        (True, {**image_row(0, url="https://x.org/a.jpg"), **image_row(1, url="https://x.org/b.jpg", creator=" ")}, {},
         "^Image 2: The creator is empty"),
        (True, {**image_row(0, url="https://x.org/a.jpg"), **image_row(1, url="https://x.org/b.jpg")},
         {"image_file": SimpleUploadedFile("x.png", png_bytes())}, "not both"),
    ],
)
def test_image_lists_are_refused_with_the_problem_named(multi, data, uploads, message):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=multi)])
    worker, assignment = take(round)
    before = (Instance.objects.count(), Image.objects.count())
    with pytest.raises(InvalidSubmission, match=message):
        submit(worker, assignment, {"instruction": "Q?", **data}, uploads)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and assignment.payload is None
    assert (Instance.objects.count(), Image.objects.count()) == before


def test_a_bad_file_in_image_2_is_named_and_nothing_is_stored(media_in_tmp):
    round = make_round(task_type="instruction_generation", targets=[make_family(multi=True)])
    worker, assignment = take(round)
    data = {"instruction": "Before and after?", **image_row(0), **image_row(1), **image_row(2)}
    files = {**image_upload(0, png_bytes("blue")), **image_upload(1, b"GIF89a not really"),
             **image_upload(2, png_bytes("green"))}
    images_before = Image.objects.count()
    with pytest.raises(InvalidSubmission, match="^Image 2: The image was refused: .*not a readable image"):
        submit(worker, assignment, data, files)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and assignment.payload is None
    assert not Instance.objects.exists() and Image.objects.count() == images_before
    assert not any(path.is_file() for path in media_in_tmp.rglob("*"))


# --- caption ------------------------------------------------------------------------------------------


def test_captions_one_per_image_become_current_when_the_item_completes():
    instance = make_instance(images=2, captions=False)
    round = make_round(task_type="caption", targets=[instance])
    worker, assignment = take(round)
    with pytest.raises(InvalidSubmission, match="one caption per image"):
        submit(worker, assignment, {"captions": ["only one"]})
    with pytest.raises(InvalidSubmission, match="image 2 is empty"):
        submit(worker, assignment, {"captions": ["first", "   "]})
    assert not Caption.objects.filter(instance=instance).exists()

    submit(worker, assignment, {"captions": ["A red circle.", "A blue square."]})
    captions = list(Caption.objects.filter(instance=instance).order_by("position"))
    assert [(c.text, c.source, c.is_current, c.author) for c in captions] == [
        ("A red circle.", Source.CROWD, True, worker.user),
        ("A blue square.", Source.CROWD, True, worker.user),
    ]
    instance.refresh_from_db()
    assert instance.status == Instance.Status.AWAITING_REFERENCE


def test_recaptioning_replaces_the_current_captions():
    instance = make_instance(images=1, captions=True)
    round = make_round(task_type="caption", targets=[instance], workers_per_item=2)
    first, a = take(round)
    submit(first, a, {"captions": ["first worker"]})
    assert Caption.objects.get(instance=instance, is_current=True).source == Source.RESEARCHER
    second, b = take(round)
    submit(second, b, {"captions": ["second worker"]})
    current = Caption.objects.get(instance=instance, is_current=True)
    assert (current.text, current.source) == ("first worker", Source.CROWD)


# --- verification ------------------------------------------------------------------------------------


def run_verification(outcomes, harmful=None):
    candidate = make_candidate()
    round = make_round(task_type="verification", targets=[candidate], workers_per_item=len(outcomes))
    for index, outcome in enumerate(outcomes):
        worker, assignment = take(round)
        submit(worker, assignment, {"outcome": outcome, "harmful": bool(harmful and harmful[index])})
    candidate.instance.refresh_from_db()
    return candidate, round


def test_verification_majority_correct_verifies_and_accepts_the_reference():
    candidate, round = run_verification(["correct", "correct", "response_problem"])
    assert Verification.objects.filter(candidate=candidate, is_aggregate=False, source=Source.CROWD).count() == 3
    verdict = Verification.objects.get(candidate=candidate, is_aggregate=True)
    assert verdict.outcome == Verification.Outcome.CORRECT
    assert candidate.instance.status == Instance.Status.VERIFIED
    assert AcceptedReference.objects.get(instance=candidate.instance).candidate == candidate
    assert round.items.get().aggregate_result["votes"] == {"correct": 2, "response_problem": 1}


@pytest.mark.parametrize(
    "outcomes, harmful, reason",
    [
        (["response_problem", "response_problem", "correct"], None, Instance.DiscardReason.RESPONSE),
        (["caption_problem", "caption_problem", "correct"], None, Instance.DiscardReason.CAPTION),
        (["correct", "caption_problem", "response_problem"], None, Instance.DiscardReason.UNVERIFIED),
        (["correct", "correct", "correct"], [True, True, False], Instance.DiscardReason.HARMFUL),
    ],
)
def test_verification_discards_with_the_reason(outcomes, harmful, reason):
    candidate, _round = run_verification(outcomes, harmful)
    assert candidate.instance.status == Instance.Status.DISCARDED
    assert candidate.instance.discard_reason == reason
    assert not AcceptedReference.objects.filter(instance=candidate.instance).exists()


def test_verification_needs_a_judgment():
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker, assignment = take(round)
    with pytest.raises(InvalidSubmission, match="correct"):
        submit(worker, assignment, {"harmful": False})
    with pytest.raises(InvalidSubmission, match="Unknown judgment"):
        submit(worker, assignment, {"outcome": "no_outcome"})
    assert not Verification.objects.exists()


# --- submissions in general ------------------------------------------------------------------------


def test_resubmitting_the_same_answers_stores_them_once():
    round = make_round(task_type="verification", targets=[make_candidate()], workers_per_item=2)
    worker, assignment = take(round)
    data = {"outcome": "correct", "harmful": False, "comment": "fine"}
    first = submit(worker, assignment, data)
    again = submit(worker, assignment, {"outcome": "correct", "harmful": "false", "comment": " fine "})
    assert (first.created, again.created) == (True, False)
    assert Verification.objects.count() == 1
    with pytest.raises(ConflictingResubmission):
        submit(worker, assignment, {"outcome": "response_problem"})
    assignment.refresh_from_db()
    assert assignment.payload["outcome"] == "correct"
    assert Verification.objects.count() == 1


def test_unknown_and_foreign_assignments_are_refused():
    round = make_round(task_type="verification", targets=[make_candidate()])
    owner, assignment = take(round)
    with pytest.raises(AssignmentNotFound):
        submit_assignment(assignment_id=999999, worker=owner, data={"outcome": "correct"})
    with pytest.raises(AssignmentNotFound, match="^Unknown assignment.$"):
        submit_assignment(assignment_id=assignment.pk, worker=make_worker(), data={"outcome": "correct"})
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_submissions_to_a_closed_round_are_refused():
    round = make_round(task_type="verification", targets=[make_candidate()])
    worker, assignment = take(round)
    close_round(round=round)
    with pytest.raises(RoundNotOpen):
        submit(worker, assignment, {"outcome": "correct"})
    assert not Verification.objects.exists()


def test_gold_items_record_whether_the_worker_passed():
    round = make_round(
        task_type="verification", targets=[make_candidate(), make_candidate()],
        gold_answers={0: {"outcome": "response_problem"}},
    )
    worker, gold = take(round)
    assert gold.item.is_gold
    submit(worker, gold, {"outcome": "correct"})
    gold.refresh_from_db()
    assert gold.gold_passed is False
    _, normal = take(round, worker)
    submit(worker, normal, {"outcome": "correct"})
    normal.refresh_from_db()
    assert normal.gold_passed is None


def test_items_complete_once_when_all_judgments_are_in(monkeypatch):
    calls = []
    original = submissions.on_item_completed
    monkeypatch.setattr(submissions, "on_item_completed", lambda *, item: (calls.append(item.pk), original(item=item)))
    round = make_round(task_type="verification", targets=[make_candidate()], workers_per_item=2)
    w1, a1 = take(round)
    submit(w1, a1, {"outcome": "correct"})
    assert calls == []
    w2, a2 = take(round)
    submit(w2, a2, {"outcome": "correct"})
    submit(w2, a2, {"outcome": "correct"})
    assert calls == [a2.item_id]
    assert round.items.get().completed_at is not None


# --- pairwise --------------------------------------------------------------------------------------


def test_pairwise_winner_follows_the_recorded_sides_and_feeds_battles():
    instance = make_instance()
    x, y = make_outputs(instance=instance, models=("model-x", "model-y"))
    round = make_round(task_type="pairwise", targets=[(x, y)], workers_per_item=3)
    chosen_models = []
    for _ in range(3):
        worker, assignment = take(round)
        assert set(assignment.presentation.values()) == {"a", "b"}
        # Every worker picks model-x, wherever it was shown.
        choice = "left" if assignment.presentation["left"] == "a" else "right"
        outcome = submit(worker, assignment, {"choice": choice})
        chosen_models.append(outcome.assignment.result["winner"])
    assert chosen_models == ["a", "a", "a"]
    item = round.items.get()
    assert item.aggregate_result == {"winner": "a", "votes": {"a": 3, "b": 0}, "agreement": 3, "judgments": 3}

    battles = selectors.pairwise_battles(round)
    assert list(battles[["model_a", "model_b", "winner"]].itertuples(index=False, name=None)) == [
        ("model-x", "model-y", "model_a")
    ] * 3
    assert set(battles["category"]) == {instance.family.name}
    assert battles["worker_id"].nunique() == 3


def test_pairwise_against_the_reference_and_bad_choices():
    instance = make_instance()
    [output] = make_outputs(instance=instance, models=("model-x",))
    reference = make_reference(instance=instance)
    round = make_round(task_type="pairwise", targets=[(output, reference)])
    worker, assignment = take(round)
    context = REGISTRY.get("pairwise").context(assignment)
    assert {context["left"]["text"], context["right"]["text"]} == {output.text, reference.text}
    for bad, message in [({}, "Choose the better"), ({"choice": "middle"}, "left or right")]:
        with pytest.raises(InvalidSubmission, match=message):
            submit(worker, assignment, bad)
    submit(worker, assignment, {"choice": "left"})
    battles = selectors.pairwise_battles()
    assert battles.loc[0, "model_b"] == "human-verified reference"


def test_pairwise_items_pair_outputs_of_one_instance():
    from django.core.exceptions import ValidationError

    x = make_outputs(instance=make_instance(), models=("m1",))[0]
    y = make_outputs(instance=make_instance(), models=("m2",))[0]
    with pytest.raises(ValidationError):
        make_round(task_type="pairwise", targets=[(x, y)])


# --- ranking ---------------------------------------------------------------------------------------


def test_ranking_stores_a_permutation_and_reads_back_long_format():
    review_set = make_review_set()
    round = make_round(task_type="ranking", targets=[review_set], workers_per_item=3)
    review_ids = sorted(review_set.reviews.values_list("pk", flat=True))
    for _ in range(3):
        worker, assignment = take(round)
        assert sorted(assignment.presentation["review_order"]) == review_ids
        submit(worker, assignment, {"order": shown_order(assignment, review_ids)})
        assert Assignment.objects.get(pk=assignment.pk).payload == {"order": review_ids}
    frame = selectors.ranking_judgments(round)
    assert len(frame) == 15
    assert set(frame["item_id"]) == {review_set.pk}
    assert frame["annotator_id"].nunique() == 3
    # Reviews were created in prompt-rank order and ranked in id order: ranks equal prompt ranks.
    assert (frame["rank"] == frame["prompt_rank"]).all()
    assert round.items.get().completed_at is not None


@pytest.mark.parametrize(
    "order_of, message",
    [
        (lambda ids: ids[:4], "exactly once"),
        (lambda ids: ids[:4] + ids[:1], "exactly once"),
        (lambda ids: ids[:4] + [ids[4] + 1000], "exactly once"),
        (lambda ids: [], "missing"),
        (lambda ids: ["x"] * 5, "review ids"),
    ],
)
def test_ranking_refuses_anything_but_a_permutation(order_of, message):
    review_set = make_review_set()
    round = make_round(task_type="ranking", targets=[review_set])
    worker, assignment = take(round)
    ids = shown_order(assignment, sorted(review_set.reviews.values_list("pk", flat=True)))
    with pytest.raises(InvalidSubmission, match=message):
        submit(worker, assignment, {"order": order_of(ids)})
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_ranking_items_match_the_round_language():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        make_round(task_type="ranking", targets=[make_review_set(language="ja")], language="en")


def test_round_progress_reports_spend_and_effective_wage():
    from datetime import timedelta

    from django.utils import timezone

    minimum = selectors.MIN_TIMED_TASKS
    round = make_round(task_type="verification", targets=[make_candidate() for _ in range(minimum + 1)],
                       reward_per_task=Decimal("0.50"))
    worker = make_worker()
    start = timezone.now()
    for n in range(1, minimum + 1):
        a = request_assignment(round=round, worker=worker, now=start)
        submit_assignment(assignment_id=a.pk, worker=worker, data={"outcome": "correct"},
                                   now=start + timedelta(seconds=90))
        progress = selectors.round_progress(round=round)
        assert progress["timed_tasks"] == n
        if n < minimum:
            # Too few task times for a wage: none is shown rather than a wild one.
            assert progress["median_seconds"] == 90 and progress["effective_hourly_wage"] is None
    assert progress["items_completed"] == minimum
    assert progress["spent"] == Decimal("0.50") * minimum
    assert progress["median_seconds"] == 90
    assert progress["effective_hourly_wage"] == Decimal("20.00")
