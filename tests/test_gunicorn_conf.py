"""gunicorn.conf.py: what each worker process does once the application is loaded."""
from __future__ import annotations

import gc
import runpy
from pathlib import Path

CONF = Path(__file__).resolve().parent.parent / "gunicorn.conf.py"


def test_a_worker_freezes_what_loading_the_application_made():
    conf = runpy.run_path(str(CONF))
    before = gc.get_freeze_count()
    try:
        conf["post_worker_init"](None)
        # Everything alive now is out of the collector's passes: this test's process holds the loaded
        # application, as a worker does.
        assert gc.get_freeze_count() > max(before, 10_000)
    finally:
        gc.unfreeze()
