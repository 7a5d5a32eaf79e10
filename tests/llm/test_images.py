import base64

import pytest

from llm.images import data_url, image_url, sniff_image_type, vision_message

JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 "


def test_urls_pass_through():
    assert image_url("https://example.org/a.jpg") == "https://example.org/a.jpg"
    assert image_url("data:image/png;base64,AAAA") == "data:image/png;base64,AAAA"


def test_bytes_and_files_become_data_urls_with_their_real_type(tmp_path):
    assert image_url(JPEG) == "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()
    misnamed = tmp_path / "photo.png"  # the content decides, not the extension
    misnamed.write_bytes(WEBP)
    assert image_url(misnamed).startswith("data:image/webp;base64,")
    assert image_url(str(misnamed)) == image_url(misnamed)


def test_unknown_bytes_and_missing_files_are_refused(tmp_path):
    assert sniff_image_type(b"hello") is None
    with pytest.raises(ValueError, match="mime="):
        image_url(b"hello")
    assert data_url(b"hello", "image/x-custom").startswith("data:image/x-custom;base64,")
    with pytest.raises(FileNotFoundError):
        image_url(tmp_path / "missing.jpg")


def test_vision_message_keeps_text_then_images_in_order():
    message = vision_message("Compare.", ["https://a/1.jpg", "https://a/2.jpg"], detail="low")
    assert message == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Compare."},
            {"type": "image_url", "image_url": {"url": "https://a/1.jpg", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "https://a/2.jpg", "detail": "low"}},
        ],
    }
