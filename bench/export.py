"""Benchmark: a release of 100,000 instances vs writing the same rows with pandas.

A throw-away SQLite database gets two projects of verified VisIT-Bench instances (10,000 and
100,000; a fifth of them multi-image with two images). For each size, in separate processes so
peaks do not mix:

- ``release``: ``releases_app.services.make_release`` (streams rows in batches into CSV, JSONL and
  Parquet, plus the image manifest, dataset card and checksums);
- ``pandas``: the same instance rows, built by the same code from the same query, collected in a
  list, then written with ``DataFrame.to_csv`` / ``to_json(lines=True)`` / ``to_parquet``, and the
  image manifest likewise.

Each method and size runs twice, each time in a fresh process: once for time and resident
memory, once for the tracemalloc peak. tracemalloc hooks every allocation and slows both methods
several times over (and its own records add to the resident set), so it is never on while the
clock runs. Time is wall clock and the process's CPU time (user + system, steadier on a busy
machine); memory is the peak resident set size above what the process held
before writing (``resource.getrusage`` / ``/proc/self/statm``: it sees Arrow's allocations, which
tracemalloc does not), and, from the second run, the tracemalloc peak of Python objects.

Run from the repository root: ``python bench/export.py`` (``--sizes 1000 5000`` for a quick run).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_TIME_RATIO = 2.0
MULTI_EVERY = 5  # every fifth instance shows two images


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    import django

    django.setup()


def build_database(database: Path, sizes: list[int]) -> None:
    setup_django(database)
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from datasets_app.models import (
        AcceptedReference, Caption, Image, Instance, InstanceImage, InstructionFamily, ReferenceCandidate,
        Source, Verification,
    )
    from datasets_app.instance_status import new_instance
    from projects.services import create_project

    call_command("migrate", verbosity=0)
    owner = User.objects.create_user("bench")
    for size in sizes:
        project = create_project(name=f"Bench {size}", slug=f"bench-{size}", owner=owner)
        families = {
            multi: InstructionFamily.objects.create(name=f"{size} {'multi' if multi else 'single'}",
                                                    is_multi_image=multi, project=project)
            for multi in (False, True)
        }
        for start in range(0, size, 5000):
            numbers = range(start, min(start + 5000, size))
            layout = [(n, 2 if n % MULTI_EVERY == 0 else 1) for n in numbers]
            images = Image.objects.bulk_create(
                Image(project=project, url=f"https://images.example.org/{size}/{n}/{p}.jpg", license="CC-BY-4.0",
                      creator=f"creator {n}", source_url=f"https://source.example.org/{n}")
                for n, count in layout for p in range(count))
            instances = Instance.objects.bulk_create(
                new_instance(family=families[count > 1], instruction=f"Instruction number {n}: what is shown "
                             "here, and what would you do next?", status=Instance.Status.VERIFIED,
                             source=Source.CROWD, content_key=f"{size}-{n}")
                for n, count in layout)
            links, captions, position = [], [], 0
            for instance, (n, count) in zip(instances, layout):
                for p in range(count):
                    links.append(InstanceImage(instance=instance, image=images[position], position=p))
                    captions.append(Caption(instance=instance, position=p, kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                                            text=f"A detailed caption of image {p} of instance {n}. " * 3))
                    position += 1
            InstanceImage.objects.bulk_create(links)
            Caption.objects.bulk_create(captions)
            candidates = ReferenceCandidate.objects.bulk_create(
                ReferenceCandidate(instance=instance, text=f"The reference answer for instance {n}. " * 4,
                                   model_name="gpt-4") for instance, (n, _) in zip(instances, layout))
            Verification.objects.bulk_create(
                Verification(candidate=candidate, outcome=Verification.Outcome.CORRECT, is_aggregate=True)
                for candidate in candidates)
            AcceptedReference.objects.bulk_create(
                AcceptedReference(instance=candidate.instance, text=candidate.text, candidate=candidate,
                                  origin=AcceptedReference.Origin.VERIFIED_CANDIDATE) for candidate in candidates)


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write_with_pandas(project, out: Path) -> int:
    """The same rows as a release's instances and images tables, collected and written with pandas."""
    import pandas as pd

    from datasets_app.models import Image, InstanceImage
    from datasets_app.visitbench_csv import MULTI_IMAGE, multi_image_record, single_image_record
    from releases_app.services import CSV_FILES, _ReleaseBuilder, releasable_instances

    class Collect:
        def __init__(self):
            self.rows = []

        def add(self, row):
            self.rows.append(row)

    builder = _ReleaseBuilder(project=project, directory=out, base_url="https://bench.example.org/",
                              threshold=0.6, batch_rows=2000)
    all_instances, builder.instances = releasable_instances(project)
    (out / "data").mkdir(parents=True)
    (out / "visitbench").mkdir()
    table = Collect()
    for schema, relative in CSV_FILES.items():
        instances = builder.instances.filter(family__is_multi_image=(schema == MULTI_IMAGE))
        to_record = multi_image_record if schema == MULTI_IMAGE else single_image_record
        records = [to_record(row) for row in builder._instance_rows(instances, table)]
        if records:
            pd.DataFrame(records).to_csv(out / relative, index=False, lineterminator="\n")
    frame = pd.DataFrame(table.rows)
    frame.to_json(out / "data" / "instances.jsonl", orient="records", lines=True, force_ascii=False)
    frame.to_parquet(out / "data" / "instances.parquet", compression="zstd", index=False)
    images = pd.DataFrame(list(Image.objects.filter(
        pk__in=InstanceImage.objects.filter(instance__in=all_instances).values("image")).order_by("pk").values(
        "pk", "url", "license", "creator", "source_url", "sha256", "width", "height")))
    images.to_json(out / "data" / "images.jsonl", orient="records", lines=True, force_ascii=False)
    images.to_parquet(out / "data" / "images.parquet", compression="zstd", index=False)
    return len(frame)


def child(method: str, size: int, database: Path, out: Path, probe: str) -> dict:
    """One measured write. ``probe`` is ``time`` (wall clock and peak RSS, tracemalloc off) or
    ``python-memory`` (the tracemalloc peak; its time is not reported, tracemalloc inflates it)."""
    setup_django(database)
    from projects.models import Project
    from releases_app.services import make_release

    project = Project.objects.get(slug=f"bench-{size}")
    project.families.count()  # warm the connection before measuring
    before = current_rss_bytes()
    if probe == "python-memory":
        tracemalloc.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    if method == "release":
        # Each probe makes its own release (a name and version is made once per project).
        rows = make_release(project=project, name="bench", version=f"{size}-{probe}", out_dir=out).counts["instances"]
    else:
        rows = write_with_pandas(project, out)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    if probe == "python-memory":
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {"rows": rows, "traced_peak": traced_peak}
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"rows": rows, "seconds": seconds, "cpu_seconds": cpu_seconds, "rss_growth": max(peak_rss - before, 0)}


def run_child(method: str, size: int, database: Path, out: Path, probe: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", method, str(size), str(database), str(out), probe],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{method} {size} ({probe}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(method: str, size: int, database: Path, work: Path) -> dict:
    """The timed run first, then the tracemalloc run, each in its own process and folder."""
    timed = run_child(method, size, database, work / f"{method}-{size}-time", "time")
    traced = run_child(method, size, database, work / f"{method}-{size}-python-memory", "python-memory")
    assert timed["rows"] == traced["rows"], (timed, traced)
    return {**timed, "traced_peak": traced["traced_peak"]}


def mib(value: float) -> str:
    return f"{value / 2**20:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--child", nargs=5, metavar=("METHOD", "SIZE", "DB", "OUT", "PROBE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, size, database, out, probe = args.child
        print(json.dumps(child(method, int(size), Path(database), Path(out), probe)))
        return

    with tempfile.TemporaryDirectory(prefix="crowdbench-export-bench-") as folder:
        work = Path(folder)
        database = work / "bench.sqlite3"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                        f"from bench.export import build_database; from pathlib import Path; "
                        f"build_database(Path({str(database)!r}), {args.sizes!r})"], check=True, cwd=ROOT)
        print(f"database with {sum(args.sizes):,} instances built in {time.perf_counter() - started:.0f} s\n")
        results = {(method, size): measure(method, size, database, work)
                   for size in args.sizes for method in ("release", "pandas")}

    print(f"{'rows':>8} | {'release s':>9} {'pandas s':>9} {'time ×':>7} | "
          f"{'release MiB':>11} {'pandas MiB':>10} {'memory ×':>8} | {'release py MiB':>14} {'pandas py MiB':>13}")
    print("-" * 112)
    for size in args.sizes:
        ours, theirs = results[("release", size)], results[("pandas", size)]
        assert ours["rows"] == theirs["rows"] == size, (ours, theirs)
        print(f"{size:>8,} | {ours['seconds']:9.2f} {theirs['seconds']:9.2f} {ours['seconds'] / theirs['seconds']:7.2f} | "
              f"{mib(ours['rss_growth']):>11} {mib(theirs['rss_growth']):>10} "
              f"{ours['rss_growth'] / max(theirs['rss_growth'], 1):8.2f} | "
              f"{mib(ours['traced_peak']):>14} {mib(theirs['traced_peak']):>13}")
    print("(py MiB: the tracemalloc peak, from a second run of each write; the times and resident memory "
          "come from the first run, without tracemalloc)")
    for size in args.sizes:
        ours, theirs = results[("release", size)], results[("pandas", size)]
        print(f"CPU time at {size:,} rows (the writing process, user + system): release {ours['cpu_seconds']:.2f} s, "
              f"pandas {theirs['cpu_seconds']:.2f} s, × {ours['cpu_seconds'] / theirs['cpu_seconds']:.2f}")
    small, large = min(args.sizes), max(args.sizes)
    growth = results[("release", large)]["rss_growth"] / max(results[("release", small)]["rss_growth"], 1)
    pandas_growth = results[("pandas", large)]["rss_growth"] / max(results[("pandas", small)]["rss_growth"], 1)
    ratio = results[("release", large)]["seconds"] / results[("pandas", large)]["seconds"]
    print(f"\nmemory from {small:,} to {large:,} rows: release ×{growth:.2f}, pandas ×{pandas_growth:.2f}")
    print(f"time at {large:,} rows: release / pandas = {ratio:.2f} (target ≤ {TARGET_TIME_RATIO})")


if __name__ == "__main__":
    main()
