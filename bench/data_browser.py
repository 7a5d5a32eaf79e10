"""Benchmark: the cockpit's data browser on a project of 100,000 instances against one of 1,000.

A throw-away SQLite database gets two projects (1,000 and 100,000 instances over ten families, each
instance with one image and one model output). Each list page is fetched through Django's test
client as its owner, as a researcher's browser would: the families with their coverage, the
instances (first page, last page, one stage, a text search), the images and the model outputs. Each
fetch runs five times; the median is printed for both sizes with the ratio large/small.

A page reads its 50 rows and the count: the pages that need no scan (first and last page, a stage)
stay close to the small project's time; a text search and the families' coverage read every row of
the project (``icontains``, the counts per family), so their ratio grows with the data.

Run from the repository root: ``python bench/data_browser.py`` (``--sizes 1000 20000`` for a quick run).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FAMILIES = 10
RUNS = 5
BATCH = 5000


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()


def build(sizes: list[int]):
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from datasets_app.instance_status import new_instance
    from datasets_app.models import Image, Instance, InstanceImage, InstructionFamily, ModelOutput, Source
    from projects.services import create_project

    call_command("migrate", verbosity=0)
    owner = User.objects.create_user("bench")
    owner.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
    statuses = list(Instance.Status.values[:4])
    for size in sizes:
        project = create_project(name=f"Bench {size}", slug=f"bench-{size}", owner=owner)
        families = [InstructionFamily.objects.create(name=f"Family {n}", project=project) for n in range(FAMILIES)]
        for start in range(0, size, BATCH):
            numbers = range(start, min(start + BATCH, size))
            images = Image.objects.bulk_create(
                Image(project=project, url=f"https://images.example.org/{size}/{n}.jpg", license="CC-BY-4.0",
                      creator=f"creator {n}") for n in numbers)
            instances = Instance.objects.bulk_create(
                new_instance(family=families[n % FAMILIES], instruction=f"Instruction number {n}: what is shown?",
                             status=statuses[n % len(statuses)], source=Source.CROWD, content_key=f"{size}-{n}")
                for n in numbers)
            InstanceImage.objects.bulk_create(
                InstanceImage(instance=instance, image=image, position=0) for instance, image in zip(instances, images))
            ModelOutput.objects.bulk_create(
                ModelOutput(instance=instance, model_name="model-x", text=f"Output {n}.")
                for instance, n in zip(instances, numbers))
    return owner


def pages(size: int) -> dict[str, str]:
    base = f"/projects/bench-{size}/data"
    last = -(-size // 50)
    return {
        "families (coverage)": f"{base}/families/",
        "instances, page 1": f"{base}/instances/",
        "instances, last page": f"{base}/instances/?page={last}",
        "instances, one stage": f"{base}/instances/?stage=verified",
        "instances, text search": f"{base}/instances/?q=number+4",
        "images": f"{base}/images/",
        "model outputs": f"{base}/outputs/",
    }


def median_seconds(client, address: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        response = client.get(address)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (address, response.status_code)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 100_000], metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        setup_django(Path(folder) / "bench.sqlite3")
        from django.test import Client
        from django.test.utils import setup_test_environment

        setup_test_environment()
        started = time.perf_counter()
        owner = build(args.sizes)
        print(f"built {args.sizes[0]:,} and {args.sizes[1]:,} instances in {time.perf_counter() - started:.1f} s")
        client = Client()
        client.force_login(owner)
        small, large = args.sizes
        print(f"{'page':<26}{small:>12,} ms{large:>12,} ms{'ratio':>9}")
        for (name, small_address), large_address in zip(pages(small).items(), pages(large).values()):
            median_seconds(client, small_address)  # warm the caches of both
            a, b = median_seconds(client, small_address), median_seconds(client, large_address)
            print(f"{name:<26}{a * 1000:>15.1f}{b * 1000:>15.1f}{b / a:>9.2f}")


if __name__ == "__main__":
    main()
