import pytest


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SITE_BASE_URL = "https://bench.example.org"
    return settings.MEDIA_ROOT
