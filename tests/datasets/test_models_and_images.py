import io

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from PIL import Image as PILImage

from datasets_app.models import (
    Caption,
    Image,
    Instance,
    InstructionFamily,
    ModelOutput,
    Review,
    ReviewSet,
)
from datasets_app.services import ImageValidationError, store_image
from demo.data import create_demo_data
from projects.services import unassigned_project

# Database behaviour (constraints (IntegrityError) and atomic imports): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def png_bytes(size=(8, 6), color="red", fmt="PNG"):
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def test_store_image_records_checksum_size_and_license_and_dedupes():
    content = png_bytes()
    image = store_image(project=unassigned_project(), content=content, license="CC-BY-4.0", creator="Ada", source_url="https://example.org/x")
    assert (image.width, image.height, image.size_bytes) == (8, 6, len(content))
    assert len(image.sha256) == 64 and image.file.name.endswith(".png")
    assert image.license == "CC-BY-4.0"
    assert store_image(project=unassigned_project(), content=content, license="CC-BY-4.0").pk == image.pk
    assert Image.objects.count() == 1


@pytest.mark.parametrize("content,message", [
    (b"", "empty"),
    (b"<svg onload=alert(1)></svg>", "not a readable image"),
    (png_bytes()[:40], "not a readable image"),
])
def test_store_image_rejects_bad_files(content, message):
    with pytest.raises(ImageValidationError, match=message):
        store_image(project=unassigned_project(), content=content, license="CC0-1.0")
    assert Image.objects.count() == 0


def test_store_image_rejects_other_formats_and_oversize(settings):
    with pytest.raises(ImageValidationError, match="format BMP is not accepted"):
        store_image(project=unassigned_project(), content=png_bytes(fmt="BMP"), license="CC0-1.0")
    settings.MAX_IMAGE_UPLOAD_BYTES = 10
    with pytest.raises(ImageValidationError, match="larger than"):
        store_image(project=unassigned_project(), content=png_bytes(), license="CC0-1.0")


def test_image_needs_a_file_or_url():
    with pytest.raises(IntegrityError), transaction.atomic():
        Image.objects.create(project=unassigned_project(), license="CC0-1.0")


def test_one_output_per_model_and_instance_and_one_review_per_level():
    create_demo_data()
    instance = Instance.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        ModelOutput.objects.create(instance=instance, model_name="llava-demo", text="again")
    review_set = ReviewSet.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Review.objects.create(review_set=review_set, prompt_rank=1, text="again")


def test_one_current_caption_per_image_and_kind():
    create_demo_data()
    caption = Caption.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Caption.objects.create(instance=caption.instance, position=caption.position, kind=caption.kind, text="x")
    caption.is_current = False
    caption.save()
    Caption.objects.create(instance=caption.instance, position=caption.position, kind=caption.kind, text="x")


def test_demo_data_is_idempotent_and_complete():
    first = create_demo_data()
    assert create_demo_data() == first
    assert first == {"families": 2, "instances": 7, "review_sets": 2}
    # Work for the demo rounds: an instance awaiting its caption, an answer awaiting verification;
    # for the demo's LLM step, a captioned instance awaiting its reference.
    assert Instance.objects.filter(status="awaiting_caption").count() == 1
    awaiting_reference = Instance.objects.get(status="awaiting_reference")
    assert awaiting_reference.captions.count() == 1 and not awaiting_reference.reference_candidates.exists()
    waiting = Instance.objects.get(status="awaiting_verification")
    assert waiting.reference_candidates.get().verifications.count() == 0
    multi = InstructionFamily.objects.get(is_multi_image=True)
    assert len(multi.ordered_seed_images()) == 2
    assert {rs.language for rs in ReviewSet.objects.all()} == {"en", "ja"}
    assert all(rs.reviews.count() == 5 for rs in ReviewSet.objects.all())
    assert all(image.license == "CC0-1.0" and image.file for image in Image.objects.all())


def test_load_demo_prints_logins_and_urls():
    out = io.StringIO()
    call_command("load_demo", "--port", "8123", stdout=out)
    text = out.getvalue()
    assert "http://127.0.0.1:8123/admin/" in text
    assert "login researcher / " in text
    assert "6 rounds (caption, instruction_generation, pairwise, ranking, ranking_ja, verification)" in text
    from annotation.models import CollectionRound, Worker

    # The simulated crowd finished pairwise, both ranking rounds and verification: those are complete.
    assert CollectionRound.objects.filter(status="open").count() == 2
    assert CollectionRound.objects.filter(status="complete").count() == 4
    assert Worker.objects.filter(user__username__in=["worker1", "worker2", "worker3"]).count() == 3
    from django.contrib.auth import authenticate

    password = text.split("login researcher / ")[1].split()[0]
    user = authenticate(username="researcher", password=password)
    assert user is not None and user.is_staff
