"""Benchmark of the results: the cores' cost, the background computation of the stored results, and
the server time of the cockpit's results, IRR and watch pages served from storage.

Part ``core`` (synthetic battles: 8 models with planted strengths over 12 categories, a
human-verified reference among them, fixed seed). For each method, three timings in the same run:

* baseline: what ``manage.py ratings --bootstrap 1000 --reference … --plot`` computes (the core's
  default bootstrap size) — ``compute_ratings`` plus the ratings plot;
* page: ``evaluation.results`` computing the page (200 bootstrap rounds, the JSON dict and both
  plots);
* cached: the same page read back from the cache (a pickled result, as with Redis).

Part ``pages`` (a database of its own: a temporary SQLite file unless ``--database-url``):

* the demo project (``manage.py load_demo``) and a big project — 1,000,000 human battles among 50
  models (imported pairwise judgments, 20 categories) and 20,000 IRR items (review sets of five
  reviews, each ranked by three workers in an open ranking round, two models' scores per review);
  ``--scale`` multiplies both sizes. Rows are written with bulk inserts.
* For each: the background computation (``evaluation.stored_results.refresh_results``: the four
  leaderboards and the IRR report) and the server time of the results, IRR and project watch pages
  (Django's test client, a logged-in researcher; p50 and p95 over ``--requests`` requests after one
  warm-up), beside the baseline measured in the same run: the pages computing their result on
  request, as before results were stored (no stored result, cache cleared; demo size).

Run from the repository root: ``python bench/results.py [--part core|pages|all] [--scale 1.0]``.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SEED = 20261130
MODELS = 8
CATEGORIES = 12
BIG_BATTLES = 1_000_000
BIG_MODELS = 50
BIG_CATEGORIES = 20
BIG_IRR_ITEMS = 20_000
RANKERS_PER_ITEM = 3
WORKER_POOL = 40
SCORED_MODELS = 2
PAGE_TARGET_BIG = 1.0
PAGE_TARGET_DEMO = 0.3
BATCH = 20_000


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ.pop("CELERY_BROKER_URL", None)  # the computation is timed in this process
    import django

    django.setup()


# --- part core ------------------------------------------------------------------------------------


def synthetic_battles(n: int, *, models: int = MODELS, categories: int = CATEGORIES, seed: int = SEED) -> pd.DataFrame:
    from django.conf import settings

    rng = np.random.default_rng(seed)
    names = [f"model-{i}" for i in range(models - 1)] + [settings.ANNOTATION_REFERENCE_SIDE_NAME]
    strength = np.linspace(-1.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    p = 1 / (1 + 10 ** (strength[b] - strength[a]))
    winner = np.where(rng.random(n) < p, "model_a", "model_b")
    return pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": winner,
                         "category": rng.integers(0, categories, n).astype(str)})


def timed(function, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def core(args) -> None:
    from django.conf import settings

    from evaluation.results import PAGE_BOOTSTRAP_ROUNDS, leaderboard_result
    from stats.ratings import compute_ratings, plot_ratings

    frame = synthetic_battles(args.battles)
    reference = settings.ANNOTATION_REFERENCE_SIDE_NAME
    project = SimpleNamespace(slug="bench")
    compute_ratings(frame.head(100), bootstrap=2)  # load the compiled Elo kernels once, outside the timings
    print(f"core: {args.battles} battles, {MODELS} models, {CATEGORIES} categories; best of 3 runs")
    print(f"{'method':<8}{'baseline (1000 rounds)':>24}{'page (200 rounds)':>20}{'cached':>12}{'page/baseline':>15}"
          f"{'cached/page':>13}")
    for method in ("elo", "bt"):
        def baseline():
            plot_ratings(compute_ratings(frame, method=method, bootstrap=1000, reference=reference))

        def page():
            return leaderboard_result(frame, project=project, source="human", method=method,
                                      bootstrap=PAGE_BOOTSTRAP_ROUNDS, seed=0)

        stored = pickle.dumps(page())
        base_s, page_s = timed(baseline), timed(page)
        cached_s = timed(lambda: pickle.loads(stored), repeat=20)
        print(f"{method:<8}{base_s:>23.3f}s{page_s:>19.3f}s{cached_s * 1000:>10.2f}ms{page_s / base_s:>15.3f}"
              f"{cached_s / page_s:>13.5f}")


# --- part pages: the projects ---------------------------------------------------------------------


def researcher_user():
    from django.conf import settings
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username="bench-researcher")
    user.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
    return user


def insert_rows(model, columns: list[str], rows) -> None:
    """Plain multi-row inserts in batches: far faster than building a model object per row."""
    from django.db import connection, transaction

    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(model._meta.get_field(c).column) for c in columns)
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
    rows = iter(rows)
    with transaction.atomic(), connection.cursor() as cursor:
        while True:
            batch = [row for _, row in zip(range(BATCH), rows)]
            if not batch:
                break
            cursor.executemany(sql, batch)


def build_big_project(*, battles: int, irr_items: int, owner):
    """1M battles among 50 models and 20,000 ranked IRR items (at ``--scale`` 1), bulk-inserted."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from annotation.models import Assignment, WorkItem
    from annotation.services.rounds import create_round, open_round
    from annotation.services.workers import get_or_create_local_worker
    from datasets_app.instance_status import new_instance
    from datasets_app.models import Image, Instance, InstructionFamily, Review, ReviewSet, Source
    from evaluation.models import ImportedPreference, ReviewScore
    from projects.services import create_project

    rng = np.random.default_rng(SEED)
    now = timezone.now()
    project = create_project(name="Big study", slug="big", owner=owner)
    families = InstructionFamily.objects.bulk_create(
        InstructionFamily(project=project, name=f"Category {c:02d}") for c in range(BIG_CATEGORIES))
    instances = Instance.objects.bulk_create(
        new_instance(family=families[n % BIG_CATEGORIES], instruction=f"Instruction {n}", status=Instance.Status.VERIFIED,
                     source=Source.IMPORTED, content_key=f"big-{n}") for n in range(2000))
    instance_ids = np.array([instance.pk for instance in instances])

    frame = synthetic_battles(battles, models=BIG_MODELS, categories=len(instances), seed=SEED + 1)
    on = instance_ids[frame["category"].astype(int).to_numpy()]
    insert_rows(ImportedPreference, ["instance", "model_a", "model_b", "winner", "occurrence", "source_file",
                                     "source_row", "created_at"],
                ((int(i), a, b, w, n + 1, "bench.csv", n + 1, now)
                 for n, (i, a, b, w) in enumerate(zip(on, frame["model_a"], frame["model_b"], frame["winner"]))))

    images = Image.objects.bulk_create(Image(project=project, url=f"https://images.example.org/{n}.jpg")
                                       for n in range(200))
    review_sets = []
    for start in range(0, irr_items, BATCH):
        review_sets += ReviewSet.objects.bulk_create(
            ReviewSet(project=project, external_id=f"set-{n}", image=images[n % len(images)], category="art",
                      language="en") for n in range(start, min(start + BATCH, irr_items)))
    insert_rows(Review, ["review_set", "prompt_rank", "text"],
                ((s.pk, rank, f"Review {rank} of set {s.pk}.") for s in review_sets for rank in range(1, 6)))
    reviews = {}
    for set_id, review_id in Review.objects.filter(review_set__project=project).values_list("review_set_id", "pk"):
        reviews.setdefault(set_id, []).append(review_id)
    insert_rows(ReviewScore, ["review", "model_name", "ranker_kind", "score", "prompt_version", "created_at",
                              "updated_at"],
                ((review_id, f"scorer-{m}", "uploaded", float(rank + rng.normal(0, 1 + m)), "", now, now)
                 for m in range(SCORED_MODELS) for ids in reviews.values()
                 for rank, review_id in enumerate(sorted(ids), 1)))

    round = create_round(name="Big ranking round", task_type="ranking", project=project,
                         workers_per_item=RANKERS_PER_ITEM, language="en")
    item_of = {}
    for start in range(0, len(review_sets), BATCH):
        chunk = review_sets[start:start + BATCH]
        created = WorkItem.objects.bulk_create(WorkItem(round=round, position=start + n, review_set=s, completed_at=now)
                                               for n, s in enumerate(chunk))
        item_of.update({s.pk: item.pk for s, item in zip(chunk, created)})
    open_round(round=round)
    workers = [get_or_create_local_worker(user=User.objects.create_user(f"bench-worker-{n}"))
               for n in range(WORKER_POOL)]

    def assignment(s, w):
        ids = sorted(reviews[s.pk])
        order = [ids[k] for k in np.argsort(np.arange(5) + rng.normal(0, 1.5, 5))]
        submitted = now - pd.Timedelta(seconds=int(rng.integers(0, 40 * 3600)))
        return Assignment(round=round, item_id=item_of[s.pk], worker=workers[w], status=Assignment.Status.SUBMITTED,
                          review_status=Assignment.ReviewStatus.SUBMITTED,
                          confirmation=Assignment.Confirmation.CONFIRMED, accepted_at=submitted - pd.Timedelta(seconds=90),
                          expires_at=submitted + pd.Timedelta(hours=1), submitted_at=submitted, duration_seconds=90.0,
                          presentation={"review_order": ids}, payload={"order": order},
                          result={"ranks": {str(r): k for k, r in enumerate(order, 1)}})

    for start in range(0, len(review_sets), BATCH // RANKERS_PER_ITEM):
        Assignment.objects.bulk_create(
            assignment(s, int(w)) for s in review_sets[start:start + BATCH // RANKERS_PER_ITEM]
            for w in rng.choice(WORKER_POOL, RANKERS_PER_ITEM, replace=False))
    return project


# --- part pages: the timings ----------------------------------------------------------------------


def request_times(client, url: str, requests: int) -> list[float]:
    response = client.get(url)  # warm-up: templates, URL resolution, the first connection
    assert response.status_code == 200, (url, response.status_code, response.content[:500])
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return times


def p95(times: list[float]) -> float:
    return float(np.percentile(times, 95))


def page_urls(project) -> dict[str, str]:
    from django.urls import reverse

    return {"results": reverse("cockpit:results", args=[project.slug]),
            "irr": reverse("cockpit:irr", args=[project.slug]),
            "watch": reverse("cockpit:watch", args=[project.slug])}


def on_request_baseline(client, project) -> dict[str, float]:
    """The results and IRR pages computing their result in the request, as before they were stored."""
    from django.core.cache import cache

    from evaluation.models import StoredResult

    times = {}
    for name, url in page_urls(project).items():
        if name == "watch":
            continue
        StoredResult.objects.filter(project=project).delete()
        cache.clear()
        start = time.perf_counter()
        response = client.get(url)
        times[name] = time.perf_counter() - start
        assert response.status_code == 200, (url, response.status_code)
    StoredResult.objects.filter(project=project).delete()
    return times


def measure_project(client, project, *, requests: int) -> dict:
    from evaluation.models import StoredResult
    from evaluation.stored_results import refresh_results

    start = time.perf_counter()
    refresh_results(project=project, force=True)
    background = time.perf_counter() - start
    views = {f"{row.kind} {row.key}": (row.judgment_count, row.compute_seconds)
             for row in StoredResult.objects.filter(project=project)}
    pages = {name: request_times(client, url, requests) for name, url in page_urls(project).items()}
    return {"background": background, "views": views, "pages": pages}


def report(title: str, measured: dict, *, baseline: dict[str, float], target: float) -> None:
    print(f"\n{title}")
    print(f"  background computation of the stored results: {measured['background']:.2f} s")
    for view, (count, seconds) in sorted(measured["views"].items()):
        print(f"    {view:<28}{count:>10} judgments{seconds:>9.2f} s")
    print(f"  {'page':<10}{'p50':>10}{'p95':>10}{'target':>9}{'met':>6}{'p95/on-request (demo)':>24}")
    for name, times in measured["pages"].items():
        value = p95(times)
        ratio = f"{value / baseline[name]:.4f}" if name in baseline else "—"
        print(f"  {name:<10}{np.median(times) * 1000:>8.1f}ms{value * 1000:>8.1f}ms{target * 1000:>7.0f}ms"
              f"{'yes' if value <= target else 'NO':>6}{ratio:>24}")


def pages(args) -> None:
    from django.core.management import call_command
    from django.test import Client

    from projects.models import Project

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        call_command("load_demo", stdout=quiet)
    print(f"pages: demo project loaded in {time.perf_counter() - started:.1f} s "
          f"({os.environ['DATABASE_URL'].split(':', 1)[0]})")
    owner = researcher_user()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    demo = Project.objects.get(slug="demo")
    from projects.services import set_member

    set_member(project=demo, user=owner)
    baseline = on_request_baseline(client, demo)
    print("  baseline, the page computing its result on request (demo): "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in baseline.items()))
    report("demo project", measure_project(client, demo, requests=args.requests), baseline=baseline,
           target=PAGE_TARGET_DEMO)

    battles, items = int(BIG_BATTLES * args.scale), int(BIG_IRR_ITEMS * args.scale)
    started = time.perf_counter()
    big = build_big_project(battles=battles, irr_items=items, owner=owner)
    print(f"\nbig project built in {time.perf_counter() - started:.1f} s: {battles} battles among {BIG_MODELS} "
          f"models, {items} IRR items x {RANKERS_PER_ITEM} rankings (--scale {args.scale})")
    report(f"big project ({battles} battles, {items} IRR items)",
           measure_project(client, big, requests=args.requests), baseline=baseline, target=PAGE_TARGET_BIG)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["core", "pages", "all"], default="all")
    parser.add_argument("--battles", type=int, default=20_000, help="battles of part core")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the big project, 1 = 1M battles")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
    parser.add_argument("--database-url", default=None, help="default: a new temporary SQLite file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        setup_django(args.database_url or f"sqlite:///{Path(folder) / 'bench.sqlite3'}")
        if args.part in ("core", "all"):
            core(args)
        if args.part in ("pages", "all"):
            pages(args)


if __name__ == "__main__":
    main()
