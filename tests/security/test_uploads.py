"""Stored images carry no metadata, keep their orientation, record the checksum of the stored bytes,
and a pixel cap refuses oversized images before their pixels are decoded."""
from __future__ import annotations

import hashlib
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from PIL import Image as PILImage
from PIL import PngImagePlugin
from rest_framework.test import APIClient

from datasets_app.models import Image, Instance
from datasets_app.services import ImageValidationError, clean_image_bytes, image_metadata, store_image
from projects.services import unassigned_project
from tests.annotation.factories import make_family, make_round, make_worker_user

pytestmark = pytest.mark.django_db

GPS_IFD = 0x8825
ORIENTATION = 0x0112


def jpeg_with_private_metadata(size=(60, 30), orientation: int = 6) -> bytes:
    """A landscape JPEG whose EXIF says "rotate a quarter turn", with camera, artist and GPS position."""
    image = PILImage.new("RGB", size, (200, 30, 30))
    for x in range(10):  # a dark block in the top-left corner shows where the top went
        for y in range(10):
            image.putpixel((x, y), (0, 0, 0))
    exif = PILImage.Exif()
    exif[0x010F] = "Canon"             # Make
    exif[0x0110] = "Canon EOS 5D"      # Model
    exif[0x013B] = "Jane Private"      # Artist
    exif[ORIENTATION] = orientation
    gps = exif.get_ifd(GPS_IFD)
    gps[1], gps[2] = "N", (52.0, 31.0, 12.0)
    gps[3], gps[4] = "E", (13.0, 24.0, 36.0)
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif, comment=b"taken at home", quality=95)
    return out.getvalue()


def test_exif_and_gps_are_gone_from_a_stored_jpeg_and_orientation_is_applied():
    raw = jpeg_with_private_metadata()
    assert b"Jane Private" in raw and b"Canon" in raw
    image = store_image(project=unassigned_project(), content=raw, license="CC0-1.0")
    stored = image.file.read()
    assert b"Jane Private" not in stored and b"Canon" not in stored and b"taken at home" not in stored
    with PILImage.open(io.BytesIO(stored)) as reopened:
        exif = reopened.getexif()
        assert not exif and not exif.get_ifd(GPS_IFD)
        assert "icc_profile" not in reopened.info and "comment" not in reopened.info
        # Orientation 6 means "rotate 90° clockwise to display": the stored pixels are upright now.
        assert reopened.size == (30, 60) and (image.width, image.height) == (30, 60)
        assert sum(reopened.getpixel((25, 2))) < 150  # the dark corner moved to the top right
    assert image.sha256 == hashlib.sha256(stored).hexdigest() and image.size_bytes == len(stored)


def test_png_text_chunks_and_icc_profiles_are_stripped():
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "Jane Private")
    info.add_itxt("XML:com.adobe.xmp", "<x:xmpmeta>GPS 52.5</x:xmpmeta>")
    out = io.BytesIO()
    from PIL import ImageCms

    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    PILImage.new("RGBA", (20, 20), (0, 128, 255, 128)).save(out, "PNG", pnginfo=info, icc_profile=srgb)
    raw = out.getvalue()
    clean = clean_image_bytes(raw)
    assert b"Jane Private" not in clean.content and b"xmpmeta" not in clean.content
    assert b"iCCP" not in clean.content and b"tEXt" not in clean.content and b"iTXt" not in clean.content
    with PILImage.open(io.BytesIO(clean.content)) as reopened:
        assert reopened.mode == "RGBA" and reopened.getpixel((5, 5)) == (0, 128, 255, 128)
        assert image_metadata(clean.content, reopened) == []


def test_cleaning_is_idempotent_and_keeps_clean_images_byte_for_byte():
    once = clean_image_bytes(jpeg_with_private_metadata()).content
    assert clean_image_bytes(once).content == once
    plain = io.BytesIO()
    PILImage.new("RGB", (8, 8), "blue").save(plain, "PNG")
    assert clean_image_bytes(plain.getvalue()).content == plain.getvalue()


def test_data_appended_after_the_image_is_dropped():
    plain = io.BytesIO()
    PILImage.new("RGB", (8, 8), "blue").save(plain, "JPEG")
    raw = plain.getvalue() + b"PK\x03\x04 a hidden archive"
    assert b"hidden archive" not in clean_image_bytes(raw).content


def test_pixel_cap_refuses_a_small_file_with_huge_dimensions(settings):
    out = io.BytesIO()
    PILImage.new("1", (6300, 6300)).save(out, "PNG", optimize=True)
    assert len(out.getvalue()) < 10_000  # tiny file, 39.7 megapixels
    with pytest.raises(ImageValidationError, match=r"6300×6300 = 39.7 megapixels; at most 16 megapixels"):
        clean_image_bytes(out.getvalue())
    settings.MAX_IMAGE_PIXELS = 1000
    with pytest.raises(ImageValidationError, match="at most 0.001 megapixels"):
        clean_image_bytes(jpeg_with_private_metadata())


def test_a_worker_upload_is_stored_without_metadata_and_its_recorded_checksum_is_the_stored_files():
    user = make_worker_user()
    client = APIClient()
    client.force_login(user)
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "What is shown?", "license": "CC0-1.0", "creator": "Jane",
        "source_url": "https://openverse.org/image/1",
        "image_file": SimpleUploadedFile("photo.jpg", jpeg_with_private_metadata(), content_type="image/jpeg"),
    }, format="multipart")
    assert response.status_code == 201, response.content
    image = Instance.objects.get().ordered_images()[0]
    stored = image.file.read()
    assert b"Jane Private" not in stored and b"Canon" not in stored
    entry = response.json()["payload"]["images"][0]
    assert entry["image_sha256"] == image.sha256 == hashlib.sha256(stored).hexdigest()
    assert (entry["image_width"], entry["image_height"]) == (30, 60)


def test_a_worker_upload_over_the_pixel_cap_is_refused_and_nothing_is_stored(settings):
    settings.MAX_IMAGE_PIXELS = 500
    client = APIClient()
    client.force_login(make_worker_user())
    round = make_round(task_type="instruction_generation", targets=[make_family()])
    assignment = client.post(reverse("annotation-api:next", args=[round.pk])).json()["assignment"]
    response = client.post(reverse("annotation-api:submit", args=[assignment["id"]]), {
        "instruction": "What is shown?", "license": "CC0-1.0", "creator": "Jane",
        "source_url": "https://openverse.org/image/1",
        "image_file": SimpleUploadedFile("photo.jpg", jpeg_with_private_metadata()),
    }, format="multipart")
    assert response.status_code == 400
    assert "megapixels" in response.json()["detail"]
    assert not Instance.objects.exists() and not Image.objects.exclude(file="").exists()


def animated_gif(frames: int, size: tuple[int, int]) -> bytes:
    """An animation of ``frames`` flat frames, plus one byte after its end: a few hundred bytes a
    frame on the wire, and the trailing byte forces a re-encode of every frame."""
    images = [PILImage.new("L", size, color=n * 20) for n in range(frames)]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:], duration=100)
    return out.getvalue() + b"\0"


def test_an_animation_whose_frames_together_exceed_the_pixel_cap_is_refused_before_any_frame_is_decoded(
        settings, monkeypatch):
    # The attack, scaled down: each frame is within the cap, ten of them are ten times over it.
    settings.MAX_IMAGE_PIXELS = 400 * 400
    raw = animated_gif(10, (400, 400))
    decoded = []
    monkeypatch.setattr(PILImage.Image, "load", lambda self, *a, **k: decoded.append(self) or None)
    with pytest.raises(ImageValidationError, match="10 frames of 400×400 = 1.6 megapixels in all"):
        clean_image_bytes(raw)
    assert decoded == []
    assert not Image.objects.exists()


def test_an_animation_within_the_budget_keeps_its_frames():
    raw = animated_gif(4, (40, 40))
    clean = clean_image_bytes(raw)
    with PILImage.open(io.BytesIO(clean.content)) as reopened:
        assert reopened.n_frames == 4 and reopened.size == (40, 40)
    assert raw.endswith(b";\0") and clean.content.endswith(b";")  # the byte after the end is gone
