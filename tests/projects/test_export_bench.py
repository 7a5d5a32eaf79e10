"""bench/export.py: the clock never runs with tracemalloc on (it slowed both sides several times
over); the tracemalloc peak comes from a separate run."""
import tracemalloc
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User

from bench import export
from projects.services import create_project

pytestmark = pytest.mark.django_db


def test_export_bench_times_without_tracemalloc_and_traces_in_a_separate_run(tmp_path, monkeypatch):
    create_project(name="Bench 3", slug="bench-3", owner=User.objects.create_user("bench"))
    monkeypatch.setattr(export, "setup_django", lambda database: None)
    tracing = []

    def fake_release(**kwargs):
        tracing.append(tracemalloc.is_tracing())
        return SimpleNamespace(counts={"instances": 3})

    monkeypatch.setattr("releases_app.services.make_release", fake_release)
    timed = export.child("release", 3, tmp_path / "db", tmp_path / "out-time", "time")
    traced = export.child("release", 3, tmp_path / "db", tmp_path / "out-memory", "python-memory")
    assert tracing == [False, True]
    assert not tracemalloc.is_tracing()
    assert timed["rows"] == traced["rows"] == 3
    assert {"seconds", "cpu_seconds", "rss_growth"} <= timed.keys() and "traced_peak" not in timed
    assert "traced_peak" in traced and "seconds" not in traced
