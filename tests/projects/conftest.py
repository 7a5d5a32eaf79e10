import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SITE_BASE_URL = "https://bench.example.org"
    return settings.MEDIA_ROOT


LOADER = """
import json, sys
from datasets import load_dataset
directory, cache, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
out = {}
for config in configs:
    out[config] = load_dataset(directory, config, cache_dir=cache)["test"].to_list()
print(json.dumps(out))
"""


@pytest.fixture
def load_offline(tmp_path):
    """Load configs of a release folder with ``datasets.load_dataset``, offline, in a fresh process."""

    def load(directory, *configs):
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
        done = subprocess.run(
            [sys.executable, "-c", LOADER, str(directory), str(tmp_path / "hf-cache"), *configs],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return load
