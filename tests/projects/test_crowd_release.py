"""A release of crowd-collected data: pseudonyms, gold items, licenses, immutability."""
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from annotation.models import Worker
from annotation.services.confirmation import record_confirmation
from annotation.services.engine import request_assignment
from annotation.services.rounds import add_items, create_round, open_round
from annotation.services.submissions import submit_assignment
from annotation.task_types.ranking import shown_order
from datasets_app.models import Image, Instance, InstanceImage
from projects.errors import ReleaseError, ReleaseExists
from projects.models import Release
from projects.services import create_project
from releases_app.services import make_release, verify_release
from tests.annotation.factories import make_family, make_instance, make_outputs, make_reference, make_review_set

# Database behaviour (a release's row order and JSON fields): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

RAW_IDS = ["A3RAWMTURKWORKER9", "A1RAWMTURKWORKER2", "5f0aaaaprolificpid00001", "5f0bbbbprolificpid00002",
           "A7RAWMTURKWORKER5"]


def provider_workers():
    return [Worker.objects.create(provider="mturk" if raw.startswith("A") else "prolific", external_id=raw)
            for raw in RAW_IDS]


def crowd_project(owner, *, slug="crowd"):
    project = create_project(name="Crowd study", slug=slug, owner=owner, description="A study.")
    family = make_family(stored_images=True, project=project)
    instances = [make_instance(family=family, stored_images=True) for _ in range(2)]
    # One instance shows an image under a non-commercial license: it stays out of the release.
    restricted = make_instance(family=family, stored_images=True)
    Image.objects.filter(pk=restricted.image_links.get().image_id).update(license="CC-BY-NC-4.0")
    for instance in [*instances, restricted]:
        instance.status = Instance.Status.VERIFIED
        instance.save()
        make_reference(instance=instance, text=f"Reference {instance.pk}.")
        make_outputs(instance=instance)
    workers = provider_workers()

    pairwise = create_round(name="pairs", task_type="pairwise", workers_per_item=5, project=project)
    targets = [tuple(instance.model_outputs.order_by("model_name")) for instance in instances]
    add_items(round=pairwise, targets=targets, gold_answers={1: {"winner": "a"}})
    open_round(round=pairwise)
    for _ in targets:
        for number, worker in enumerate(workers):
            assignment = request_assignment(round=pairwise, worker=worker)
            wanted = "a" if number < 4 else "b"  # a 4/5 majority for side a, whatever the left/right order
            choice = next(side for side in ("left", "right") if assignment.presentation[side] == wanted)
            submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})
            record_confirmation(assignment=assignment, confirmation="confirmed")  # as the provider's sync

    ranking = create_round(name="rank", task_type="ranking", workers_per_item=3, project=project)
    review_sets = [make_review_set(stored_images=True, project=project) for _ in range(2)]
    add_items(round=ranking, targets=review_sets)
    open_round(round=ranking)
    for _ in review_sets:
        for worker in workers[:3]:
            assignment = request_assignment(round=ranking, worker=worker)
            order = sorted(assignment.presentation["review_order"])  # prompt-rank order: full agreement
            submit_assignment(assignment_id=assignment.pk, worker=worker,
                                       data={"order": shown_order(assignment, order)})
            record_confirmation(assignment=assignment, confirmation="confirmed")
    return project, instances, restricted, workers


def all_text(directory: Path) -> tuple[bytes, str]:
    raw = b"".join(path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file())
    decoded = [json.dumps(pq.read_table(path).to_pylist(), default=str) for path in directory.rglob("*.parquet")]
    return raw, "\n".join(decoded)


def test_crowd_release_pseudonymises_workers_and_leaves_out_gold_and_unlicensed(tmp_path, load_offline):
    owner = User.objects.create_user("alice")
    project, instances, restricted, workers = crowd_project(owner)
    out = tmp_path / "v1"
    release = make_release(project=project, name="crowd", version="1.0.0", out_dir=out, created_by=owner)

    raw, decoded = all_text(out)
    for raw_id in RAW_IDS:
        assert raw_id.encode() not in raw and raw_id not in decoded
    assert project.pseudonym_secret.encode() not in raw

    loaded = load_offline(out, "instances", "battles", "irr_items", "rankings", "images")
    # The second instance is the target of a gold pair, so it is not released either.
    assert [row["instance_id"] for row in loaded["instances"]] == [instances[0].pk]
    assert restricted.pk not in {row["instance_id"] for row in loaded["battles"]}
    # The second pair is a gold item: none of its five judgments is released.
    assert len(loaded["battles"]) == 5 and {row["instance_id"] for row in loaded["battles"]} == {instances[0].pk}
    assert {row["winner"] for row in loaded["battles"]} == {"model_a", "model_b"}
    pseudonyms = {row["worker"] for row in loaded["battles"]}
    assert len(pseudonyms) == 5 and all(name.startswith("w_") for name in pseudonyms)

    first = loaded["instances"][0]
    assert all(url.startswith("https://bench.example.org/media/images/") for url in first["images"])
    metadata = json.loads(first["public_images_metadata"])
    assert metadata == {url: {"license": "CC0-1.0", "creator": "tests", "source": ""} for url in first["images"]}

    excluded = [image for image in loaded["images"] if not image["included"]]
    assert [image["license"] for image in excluded] == ["CC-BY-NC-4.0"] and excluded[0]["url"] is None
    # Left out: the gold pair's target and the instance with the non-commercial image.
    assert release.counts["instances_left_out"] == 2
    assert {(row["what"], row["why"], row["count"]) for row in release.counts["left_out_reasons"]} >= {
        ("instances", "gold or attention-check item", 1),
        ("instances", "image: license CC-BY-NC-4.0 does not allow publishing", 1)}

    assert len(loaded["irr_items"]) == 2
    item = loaded["irr_items"][0]
    assert len(item["reviews"]) == 5 and item["best_pair_rho"] == pytest.approx(1.0)
    assert item["human_ranks"] == [[1, 2, 3, 4, 5]] * 3 and set(item["annotators"]) <= pseudonyms
    assert len(loaded["rankings"]) == 2 * 3 * 5
    card = (out / "README.md").read_text()
    assert "| workers | 5 |" in card and "| IRR items kept (best-pair rho >= 0.6) | 2 |" in card
    assert "| pairs with majority 4/5 | 1 |" in card and "| pairs | pairwise | 10 |" in card  # gold judgments count as pay

    # Pseudonyms are stable within the project and differ in another one.
    again = make_release(project=project, name="crowd", version="1.0.1", out_dir=tmp_path / "v2")
    assert {row["worker"] for row in load_offline(again.directory, "battles")["battles"]} == pseudonyms
    other = create_project(name="Other", slug="other", owner=owner)
    from releases_app.files import pseudonym
    assert pseudonym(other.pseudonym_secret, "mturk", RAW_IDS[0]) not in pseudonyms
    assert pseudonym(project.pseudonym_secret, "mturk", RAW_IDS[0]) in pseudonyms


def test_a_release_is_immutable(tmp_path):
    owner = User.objects.create_user("alice")
    project, *_ = crowd_project(owner)
    out = tmp_path / "v1"
    release = make_release(project=project, name="crowd", version="1.0.0", out_dir=out)
    before = {path: (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
              for path in out.rglob("*") if path.is_file()}

    with pytest.raises(ReleaseExists, match="exists; releases never change"):
        make_release(project=project, name="crowd", version="1.0.0", out_dir=tmp_path / "elsewhere")
    with pytest.raises(CommandError, match="exists; releases never change"):
        call_command("make_release", "crowd", "--name", "crowd", "--version", "1.0.0", "--out", str(tmp_path / "x"))
    with pytest.raises(ReleaseError, match="never overwrites"):
        make_release(project=project, name="crowd", version="2.0.0", out_dir=out)
    with pytest.raises(ReleaseError, match="version"):
        make_release(project=project, name="crowd", version="../../etc", out_dir=tmp_path / "bad")
    with pytest.raises(ReleaseError, match="does not exist"):
        make_release(project=project, name="crowd", version="3.0.0", out_dir=tmp_path / "no" / "such")

    after = {path: (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
             for path in out.rglob("*") if path.is_file()}
    assert after == before
    assert Release.objects.count() == 1 and verify_release(release) == []
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "x").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging left
    assert all(not (path.stat().st_mode & 0o222) for path in out.rglob("*") if path.is_file())


def test_release_pay_table_shows_yen_without_decimal_places(tmp_path):
    from tests.cockpit.results_data import yen_round

    project = create_project(name="Yen study", slug="yen", owner=User.objects.create_user("yen-owner"))
    round = yen_round(project, tasks=5)  # five timed tasks of 40 s: 30 JPY per 40 s is 2700 JPY an hour
    release = make_release(project=project, name="yen", version="1.0.0", out_dir=tmp_path / "yen")
    card = (Path(release.directory) / "README.md").read_text()
    assert f"| {round.name} | pairwise | 5 | 40.0 | 30 JPY | 2700 JPY/h | 18 JPY/h |" in card
