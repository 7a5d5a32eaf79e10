"""Media on S3-compatible storage (MEDIA_STORAGE=s3, django-storages), against moto's server mode.

An uploaded image goes through the one store path (``datasets_app.services.store_image``, used by the
worker upload of instruction generation and the board), lands in the bucket, is linked with a URL
that serves it, is read back for the LLM layer, and is linked from a release.
"""
from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer
from PIL import Image as PILImage

from datasets_app.review_generation import image_source
from datasets_app.services import store_image
from projects.services import unassigned_project

pytestmark = pytest.mark.django_db

BUCKET = "crowdbench-media"


@pytest.fixture
def s3(settings):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="media-key", aws_secret_access_key="media-secret")
    client.create_bucket(Bucket=BUCKET)
    settings.STORAGES = {**settings.STORAGES, "default": media_storage_from_environment({
        "MEDIA_STORAGE": "s3", "MEDIA_S3_BUCKET": BUCKET, "MEDIA_S3_ENDPOINT_URL": endpoint,
        "MEDIA_S3_REGION": "us-east-1", "MEDIA_S3_ACCESS_KEY_ID": "media-key",
        "MEDIA_S3_SECRET_ACCESS_KEY": "media-secret", "MEDIA_S3_URL_SECONDS": "600"})}
    try:
        yield client, endpoint
    finally:
        server.stop()


def media_storage_from_environment(variables: dict) -> dict:
    """STORAGES["default"] as crowdbench/settings.py builds it in a fresh process from these variables."""
    code = "import json; from django.conf import settings; print(json.dumps(settings.STORAGES['default']))"
    env = {**os.environ, **variables, "DJANGO_SETTINGS_MODULE": "crowdbench.settings"}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], env=env,
                          capture_output=True, text=True, check=True, cwd=settings_dir())
    return json.loads(done.stdout.strip().splitlines()[-1])


def settings_dir() -> str:
    return str(Path(__file__).resolve().parents[2])


def test_the_s3_settings_come_from_the_environment():
    storage = media_storage_from_environment({"MEDIA_STORAGE": "s3", "MEDIA_S3_BUCKET": "b",
                                              "MEDIA_S3_CUSTOM_DOMAIN": "media.example.org"})
    assert storage["BACKEND"] == "storages.backends.s3.S3Storage"
    options = storage["OPTIONS"]
    assert options["bucket_name"] == "b" and options["custom_domain"] == "media.example.org"
    assert options["querystring_auth"] is False and options["file_overwrite"] is False
    # No credentials set: boto3's own chain.
    assert options["access_key"] is None and options["secret_key"] is None
    refused = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=settings_dir(),
                             env={**os.environ, "MEDIA_STORAGE": "s3", "MEDIA_S3_BUCKET": "",
                                  "DJANGO_SETTINGS_MODULE": "crowdbench.settings"},
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "MEDIA_STORAGE=s3 needs MEDIA_S3_BUCKET" in refused.stderr


def png_bytes(color=(200, 40, 40)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (32, 24), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_uploaded_image_lands_in_the_bucket_and_its_link_serves_it(s3):
    client, endpoint = s3
    image = store_image(project=unassigned_project(), content=png_bytes(), license="CC0-1.0", creator="worker")
    keys = [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == [image.file.name] and image.file.name.startswith("images/")
    stored = client.get_object(Bucket=BUCKET, Key=image.file.name)["Body"].read()
    assert PILImage.open(io.BytesIO(stored)).size == (32, 24)
    # The link is the bucket's (presigned), not /media/ on the web hosts, and it serves the bytes.
    url = image.file.url
    assert url.startswith(f"{endpoint}/{BUCKET}/images/") and "Signature" in url
    with urllib.request.urlopen(url) as response:
        assert response.read() == stored
    # The same bytes are stored once.
    assert store_image(project=unassigned_project(), content=png_bytes(), license="CC0-1.0").pk == image.pk
    assert client.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 1
    # The LLM layer gets the stored bytes (as a data URL: there is no local path on S3).
    source = image_source(image)
    assert source.startswith("data:image/png;base64,")
    assert base64.b64decode(source.split(",", 1)[1]) == stored


def test_a_release_links_images_stored_in_the_bucket(s3, study, tmp_path):
    _client, endpoint = s3
    from datasets_app.models import Instance
    from releases_app.services import make_release

    image = store_image(project=unassigned_project(), content=png_bytes((10, 120, 10)), license="CC0-1.0", creator="worker")
    link = Instance.objects.filter(family__project=study).first().image_links.first()
    link.image = image
    link.save()
    out = tmp_path / "release"
    make_release(project=study, name="s3", version="1.0.0", out_dir=out)
    texts = [p.read_text(encoding="utf-8") for p in out.rglob("*") if p.suffix in (".jsonl", ".csv", ".json")]
    linked = [t for t in texts if f"{endpoint}/{BUCKET}/{image.file.name}" in t]
    assert linked, "the release does not link the stored image"
