import pytest


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    """Uploaded images go to a throw-away folder, never the project's media."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT
