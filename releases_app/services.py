"""Releases: immutable, versioned snapshots of what a project may publish.

``make_release`` is the one way to make one (the ``make_release`` command calls it). It writes the
files into a fresh temporary folder beside the target, checks them, then moves the folder into
place; an existing folder or an existing name + version is refused, so a release's files never
change once made. What goes in:

- verified VisIT-Bench instances (not gold), in the published CSV schemas and as tables;
- IRR items kept by agreement filtering, with their reviews and human rankings;
- the crowd's judgments (pairwise battles, verifications, rankings), worker ids as pseudonyms;
- an image manifest; images whose license does not allow publishing (``datasets_app.licenses``)
  are left out with what shows them;
- what is left out and why (``data/left_out.*``, the counts and the card).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urljoin

import pandas as pd
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.models import CollectionRound, Worker, WorkItem
from annotation.selectors import pairwise_battles, ranking_judgments, round_progress, verification_judgments
from annotation.task_types import task_type_keys_yielding
from datasets_app.licenses import exclusion, is_publishable
from datasets_app.models import Image, Instance, InstanceImage, ReviewSet, Source
from datasets_app.selectors import yield_report
from datasets_app.services import iter_exported_instances
from datasets_app.visitbench_csv import MULTI_IMAGE, SINGLE_IMAGE, write_visitbench_csv
from evaluation.selectors import IRR_RANKING_COLUMNS
from kernel.money import format_money
from projects.errors import ReleaseError, ReleaseExists, ReleaseFileChanged, ReleaseFileNotFound
from projects.models import RELEASE_NAME_VALIDATOR, VERSION_VALIDATOR, Project, Release
from stats import irr
from stats.pairwise_agreement import majority_vote

from .files import (
    DEFAULT_BATCH_ROWS,
    SUMS_FILE,
    TableWriter,
    checksums_match,
    dataset_card,
    left_out_label,
    left_out_summary,
    pseudonym,
    sha256_of_handle,
    write_checksums,
)

logger = logging.getLogger(__name__)

# Rows fetched per query (prefetches use an IN list of this many ids; SQLite refuses very long ones).
DB_CHUNK_ROWS = 500
CSV_FILES = {SINGLE_IMAGE: "visitbench/single_image.csv", MULTI_IMAGE: "visitbench/multi_image.csv"}


def check_name_and_version(*, name: str, version: str) -> None:
    """Refuse a malformed release name or version (they become folder names)."""
    for value, validator, label in ((name, RELEASE_NAME_VALIDATOR, "name"), (version, VERSION_VALIDATOR, "version")):
        try:
            validator(value)
        except ValidationError as error:
            raise ReleaseError(f"Release {label} {value[:80]!r}: {' '.join(error.messages)}") from None


def make_release(
    *,
    project: Project,
    name: str,
    version: str = "1.0.0",
    out_dir: str | Path,
    created_by=None,
    threshold: float = irr.DEFAULT_THRESHOLD,
    site_base_url: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Release:
    """Write a new release of ``project`` into ``out_dir`` (which must not exist) and record it."""
    check_name_and_version(name=name, version=version)
    if not -1.0 <= threshold <= 1.0:
        raise ReleaseError(f"The IRR agreement threshold must lie in [-1, 1], got {threshold}.")
    if Release.objects.filter(project=project, name=name, version=version).exists():
        raise ReleaseExists(f"Release {name} {version} of '{project.slug}' exists; releases never change.")
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        raise ReleaseError(f"{out} exists; a release is written to a new folder and never overwrites one.")
    if not out.parent.is_dir():
        raise ReleaseError(f"The folder {out.parent} does not exist.")
    base_url = (site_base_url if site_base_url is not None else settings.SITE_BASE_URL).rstrip("/") + "/"

    with transaction.atomic():
        # One release at a time per project: the name + version check below then cannot race.
        project = Project.objects.select_for_update().get(pk=project.pk)
        if Release.objects.filter(project=project, name=name, version=version).exists():
            raise ReleaseExists(f"Release {name} {version} of '{project.slug}' exists; releases never change.")
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        staging.chmod(0o755)  # mkdtemp makes it private; a release is meant to be read
        try:
            created_at = timezone.now()
            builder = _ReleaseBuilder(project=project, directory=staging, base_url=base_url,
                                      threshold=threshold, batch_rows=batch_rows)
            counts = builder.write(name=name, version=version, created_at=created_at)
            files = write_checksums(staging)
            os.rename(staging, out)  # fails if something appeared at ``out`` meanwhile
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _make_read_only(out)
        return Release.objects.create(
            project=project, name=name, version=version, directory=str(out.resolve()),
            files=files, counts=counts, created_by=created_by, created_at=created_at,
        )


def release_folder(*, project: Project, name: str, version: str) -> Path:
    """Where the cockpit writes a release: ``RELEASES_ROOT/<project>/<name>-<version>`` (the folder of
    the project is created). Name and version are checked first, so the path stays inside the root."""
    check_name_and_version(name=name, version=version)
    parent = Path(settings.RELEASES_ROOT) / project.slug
    parent.mkdir(parents=True, exist_ok=True)
    return parent / f"{name}-{version}"


def release_file(*, release: Release, relative: str) -> Path:
    """The file of a release named ``relative`` (a file the release recorded, or ``SHA256SUMS``);
    any other name, or a file gone from disk, is "not found". Only recorded names are looked up, so no
    path outside the release's folder can be reached."""
    if relative != SUMS_FILE and relative not in release.files:
        raise ReleaseFileNotFound(f"Release {release.name} {release.version} has no file {relative[:200]!r}.")
    directory = Path(release.directory).resolve()
    path = (directory / relative).resolve()
    if not path.is_relative_to(directory) or not path.is_file():
        raise ReleaseFileNotFound(f"The file {relative[:200]!r} of release {release.name} {release.version} is missing.")
    return path


def open_release_file(*, release: Release, relative: str) -> BinaryIO:
    """The file of a release named ``relative`` (see ``release_file``), opened for reading, once its
    bytes are checked against the release's record: size and SHA-256 of a data file, every line of
    ``SHA256SUMS``. A file changed on disk since the release was made is refused
    (``ReleaseFileChanged``, 409) and logged as a warning, so only the bytes the release recorded are
    ever served. The check reads the same open file that is then served, so a file renamed over it
    after the check is not served either (the release's files are read-only; a write into the open
    file during the request is not caught)."""
    path = release_file(release=release, relative=relative)
    handle = path.open("rb")
    try:
        problem = _content_problem(release, relative, handle)
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    if problem is not None:
        handle.close()
        logger.warning(
            "Release %s %s of project %s (id %s): %s %s; the file was not served",
            release.name, release.version, release.project.slug, release.pk, relative, problem)
        raise ReleaseFileChanged(
            f"The file {relative[:200]} of release {release.name} {release.version} does not match the checksum "
            "recorded when the release was made, so it is not served: the release's folder was changed on disk. "
            "Restore the file from a copy of the release, or make a new release.")
    return handle


# An archive this large or smaller is built in memory; a larger one spills to a temporary file.
ARCHIVE_IN_MEMORY_BYTES = 32 * 1024 * 1024


def release_archive(*, release: Release) -> BinaryIO:
    """The whole release as one zip file, opened for reading: every file it recorded and
    ``SHA256SUMS``, under one folder named ``NAME-VERSION`` with the release's own layout, so that
    ``sha256sum -c SHA256SUMS`` and ``datasets.load_dataset`` work on the folder it unpacks to. Each
    file is checked as ``open_release_file`` checks it; one changed on disk refuses the whole
    archive (``ReleaseFileChanged``)."""
    folder = f"{release.name}-{release.version}"
    archive = tempfile.SpooledTemporaryFile(max_size=ARCHIVE_IN_MEMORY_BYTES)
    try:
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as writer:
            for relative in [*sorted(release.files), SUMS_FILE]:
                with open_release_file(release=release, relative=relative) as handle:
                    with writer.open(f"{folder}/{relative}", "w", force_zip64=True) as member:
                        shutil.copyfileobj(handle, member, 1024 * 1024)
        archive.seek(0)
    except BaseException:
        archive.close()
        raise
    return archive


def _content_problem(release: Release, relative: str, handle: BinaryIO) -> str | None:
    """None when the open file holds what the release recorded, else what differs."""
    if relative == SUMS_FILE:
        return None if checksums_match(handle.read(), release.files) else "does not list the recorded checksums"
    entry = release.files[relative]
    size = os.fstat(handle.fileno()).st_size
    if size != entry["bytes"]:
        return f"has {size} bytes, not the recorded {entry['bytes']}"
    digest = sha256_of_handle(handle)
    if digest != entry["sha256"]:
        return f"has SHA-256 {digest}, not the recorded {entry['sha256']}"
    return None


def _make_read_only(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def verify_release(release: Release) -> list[str]:
    """Files of the release (``SHA256SUMS`` included) that are missing or changed (empty when intact)."""
    problems = []
    directory = Path(release.directory)
    for relative in [*release.files, SUMS_FILE]:
        path = directory / relative
        if not path.is_file():
            problems.append(f"{relative}: missing")
            continue
        with path.open("rb") as handle:
            if _content_problem(release, relative, handle) is not None:
                problems.append(f"{relative}: changed")
    return problems


# --- what is releasable ------------------------------------------------------------------------


def gold_items():
    """Gold / attention-check items: neither they nor their targets nor their judgments are released."""
    return WorkItem.objects.filter(is_gold=True)


def releasable_instances(project: Project):
    """(verified non-gold instances of the project, those of them whose every image has a license
    that allows publishing)."""
    gold = gold_items()
    gold_instance = (
        Q(pk__in=gold.filter(instance__isnull=False).values("instance"))
        | Q(pk__in=gold.filter(candidate__isnull=False).values("candidate__instance"))
        | Q(pk__in=gold.filter(output_a__isnull=False).values("output_a__instance"))
        | Q(pk__in=gold.filter(reference__isnull=False).values("reference__instance"))
    )
    candidates = Instance.objects.filter(family__project=project, status=Instance.Status.VERIFIED).exclude(gold_instance)
    blocked = _non_permissive_licenses()
    unlicensed_image = InstanceImage.objects.filter(instance=OuterRef("pk"), image__license__in=blocked)
    return candidates, candidates.exclude(Exists(unlicensed_image))


def releasable_review_sets(project: Project):
    candidates = ReviewSet.objects.filter(project=project).exclude(
        pk__in=gold_items().filter(review_set__isnull=False).values("review_set"))
    return candidates, candidates.filter(image__license__in=_permissive_licenses())


def _distinct_licenses() -> list[str]:
    # Few distinct values exist, so the license decision is made in Python once per value.
    return list(Image.objects.order_by().values_list("license", flat=True).distinct())


def _permissive_licenses() -> list[str]:
    return [value for value in _distinct_licenses() if is_publishable(value)]


def _non_permissive_licenses() -> list[str]:
    return [value for value in _distinct_licenses() if not is_publishable(value)]


# --- writing -----------------------------------------------------------------------------------


@dataclass
class _ReleaseBuilder:
    project: Project
    directory: Path
    base_url: str
    threshold: float
    batch_rows: int
    _pseudonyms: dict[int, str] = field(default_factory=dict)

    def write(self, *, name: str, version: str, created_at) -> dict:
        self.tables: dict[str, TableWriter] = {}
        try:
            counts = self._write_tables()
        except BaseException:
            for writer in self.tables.values():
                writer.abort()
            raise
        stats = self._statistics(counts)
        # The datasets library cannot load a table without rows, so empty tables get no config.
        configs = {table: f"data/{table}.parquet" for table, writer in self.tables.items() if writer.rows}
        csv_files = {f"{schema.replace('_', '-')} schema": path for schema, path in CSV_FILES.items()
                     if (self.directory / path).exists()}
        card = dataset_card(
            title=self.project.name, description=self.project.description, name=name, version=version,
            created_at=created_at.isoformat(timespec="seconds"), configs=configs, csv_files=csv_files,
            stats=stats)
        (self.directory / "README.md").write_text(card, encoding="utf-8")
        manifest = {"project": self.project.slug, "name": name, "version": version,
                    "created_at": created_at.isoformat(), "counts": counts, "statistics": stats}
        (self.directory / "release.json").write_text(
            json.dumps(manifest, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
        return counts

    def _table(self, name: str) -> TableWriter:
        writer = TableWriter(self.directory, name, batch_rows=self.batch_rows)
        self.tables[name] = writer
        return writer

    def _write_tables(self) -> dict:
        counts: dict[str, int] = {}
        all_instances, self.instances = releasable_instances(self.project)
        all_sets, self.review_sets = releasable_review_sets(self.project)
        self.left_out, self.left_out_tally = self._table("left_out"), Counter()
        counts["images"], counts["images_excluded"] = self._write_images(all_instances, all_sets)
        counts["instances"], counts["instances_by_split"] = self._write_instances()
        counts["irr_items"], counts["rankings"], self.irr_agreement = self._write_irr()
        counts["battles"] = self._write_battles()
        counts["verifications"] = self._write_verifications()
        self._write_left_out_instances(all_instances)
        self._write_left_out_items(all_sets)
        tally = self.left_out_tally
        counts["instances_left_out"] = sum(n for (kind, _r, _d), n in tally.items() if kind == "instance")
        counts["irr_items_left_out"] = sum(n for (kind, _r, _d), n in tally.items() if kind == "irr_item")
        counts["left_out"] = sum(tally.values())
        counts["left_out_reasons"] = left_out_summary(tally)
        for writer in self.tables.values():
            writer.close()
        counts["workers"] = len(set(self._pseudonyms.values()))
        return counts

    # images

    def _image_url(self, image: Image) -> str:
        return image.url or self._absolute(image.file.url)

    def _write_images(self, instances, review_sets) -> tuple[int, int]:
        table = self._table("images")
        used = Image.objects.filter(
            Q(pk__in=InstanceImage.objects.filter(instance__in=instances).values("image"))
            | Q(pk__in=review_sets.values("image"))
        ).order_by("pk")
        rows = excluded = 0
        for image in used.iterator(chunk_size=DB_CHUNK_ROWS):
            why = exclusion(image.license)
            included = why is None
            rows += 1
            excluded += not included
            if why is not None:
                self._leave_out("image", image.pk, *why)
            table.add({
                "image_id": image.pk,
                # A left-out stored file is not served to the release's readers; a URL is public anyway.
                "url": self._image_url(image) if included or image.url else None,
                "license": image.license, "creator": image.creator, "source_url": image.source_url,
                "sha256": image.sha256 or None, "width": image.width, "height": image.height,
                "included": included,
                "excluded_reason": None if included else left_out_label("image", *why),
            })
        return rows, excluded

    # what is left out

    def _leave_out(self, kind: str, pk: int, reason: str, detail: str = "") -> None:
        self.left_out.add({"kind": kind, "id": pk, "reason": reason, "detail": detail})
        self.left_out_tally[(kind, reason, detail)] += 1

    def _write_left_out_instances(self, candidates) -> None:
        """Every instance of the project not released, under the first reason that applies: not
        verified, gold, then the license of its first image (by position) that keeps it out."""
        project_instances = Instance.objects.filter(family__project=self.project).order_by("pk")
        for pk, status, discard_reason in project_instances.exclude(status=Instance.Status.VERIFIED).values_list(
                "pk", "status", "discard_reason").iterator(chunk_size=DB_CHUNK_ROWS):
            self._leave_out("instance", pk, "not_verified", f"{status}: {discard_reason}" if discard_reason else status)
        gold = project_instances.filter(status=Instance.Status.VERIFIED).exclude(pk__in=candidates.values("pk"))
        for pk in gold.values_list("pk", flat=True).iterator(chunk_size=DB_CHUNK_ROWS):
            self._leave_out("instance", pk, "gold")
        blocking = (InstanceImage.objects.filter(instance__in=candidates.exclude(pk__in=self.instances.values("pk")))
                    .order_by("instance_id", "position").values_list("instance_id", "image__license"))
        previous = None
        for instance_id, license in blocking.iterator(chunk_size=DB_CHUNK_ROWS):
            why = exclusion(license)
            if why is not None and instance_id != previous:
                previous = instance_id
                self._leave_out("instance", instance_id, *why)

    def _write_left_out_items(self, candidates) -> None:
        """Every review set of the project not released as an IRR item: gold, the license of its
        image, not ranked, ranked by fewer than two workers, or agreement below the threshold."""
        project_sets = ReviewSet.objects.filter(project=self.project).order_by("pk")
        for pk in project_sets.exclude(pk__in=candidates.values("pk")).values_list("pk", flat=True):
            self._leave_out("irr_item", pk, "gold")
        for pk, license in candidates.exclude(pk__in=self.review_sets.values("pk")).order_by("pk").values_list(
                "pk", "image__license"):
            self._leave_out("irr_item", pk, *exclusion(license))
        for pk in self.review_sets.order_by("pk").values_list("pk", flat=True):
            outcome = self.irr_outcomes.get(pk, ("not_ranked", ""))
            if outcome is not None:
                self._leave_out("irr_item", pk, *outcome)

    # instances

    def _write_instances(self) -> tuple[int, dict]:
        table = self._table("instances")
        by_split = {}
        (self.directory / "visitbench").mkdir()
        for schema, relative in CSV_FILES.items():
            path = self.directory / relative
            instances = self.instances.filter(family__is_multi_image=(schema == MULTI_IMAGE))
            with path.open("w", encoding="utf-8", newline="") as handle:
                written = write_visitbench_csv(handle, schema, self._instance_rows(instances, table))
            if written == 0:
                path.unlink()
            by_split[schema] = written
        return sum(by_split.values()), by_split

    def _absolute(self, url: str) -> str:
        return urljoin(self.base_url, url.lstrip("/")) if url.startswith("/") else url

    def _instance_rows(self, instances, table):
        for exported in iter_exported_instances(instances, chunk_rows=DB_CHUNK_ROWS):
            row = exported.row
            row.image_urls = [self._absolute(url) for url in row.image_urls]
            if exported.source != Source.IMPORTED:
                # Crowd images carry their license, creator and source (the published files do too).
                row.images_metadata = {
                    url: {"license": image["license"], "creator": image["creator"], "source": image["source_url"]}
                    for url, image in zip(row.image_urls, exported.images)
                }
            table.add({
                "instance_id": exported.instance_id,
                "instruction_category": row.family,
                "instruction": row.instruction,
                "is_multiple_images": row.is_multi_image,
                "images": row.image_urls,
                "instruction_conditioned_captions": [row.dense_captions.get(i, "") for i in range(len(row.image_urls))],
                "reference_output": row.human_reference,
                "reference_origin": exported.reference_origin,
                "reference_model": exported.reference_model,
                "language": exported.language,
                "source": exported.source,
                "public_images_metadata": json.dumps(row.images_metadata, ensure_ascii=False),
            })
            yield row

    # workers

    def _worker_pseudonyms(self, worker_ids) -> dict[int, str]:
        missing = {int(pk) for pk in worker_ids} - set(self._pseudonyms)
        secret = self.project.pseudonym_secret
        for pk, provider, external_id in Worker.objects.filter(pk__in=missing).values_list(
                "pk", "provider", "external_id"):
            self._pseudonyms[pk] = pseudonym(secret, provider, external_id)
        return self._pseudonyms

    def _rounds(self, yields: str):
        """The project's rounds whose task types yield ``yields`` (the type's capability, not its name)."""
        return CollectionRound.objects.filter(project=self.project,
                                              task_type__in=task_type_keys_yielding(yields)).order_by("pk")

    # IRR

    def _write_irr(self):
        items_table, rankings_table = self._table("irr_items"), self._table("rankings")
        self.irr_outcomes: dict[int, tuple[str, str] | None] = {}  # ranked items: None when kept, else why not
        frames = [ranking_judgments(round_) for round_ in self._rounds("rankings")]
        frames = [frame for frame in frames if not frame.empty]
        if not frames:
            return 0, 0, None
        rankings = pd.concat(frames, ignore_index=True)
        gold = set(gold_items().filter(pk__in=rankings["work_item_id"].unique()).values_list("pk", flat=True))
        released = set(self.review_sets.filter(pk__in=rankings["item_id"].unique()).values_list("pk", flat=True))
        rankings = rankings[~rankings["work_item_id"].isin(gold) & rankings["item_id"].isin(released)]
        if rankings.empty:
            return 0, 0, None
        result = irr.agreement(rankings[IRR_RANKING_COLUMNS].reset_index(drop=True), threshold=self.threshold)
        items = result.items_frame()
        for item_id, evaluable, item_kept in zip(items[irr.ITEM], items["evaluable"], items["kept"]):
            self.irr_outcomes[int(item_id)] = (None if item_kept else ("low_agreement", f"{self.threshold:g}")
                                               if evaluable else ("no_annotator_pair", ""))
        kept = items[items["kept"]]
        names = self._worker_pseudonyms(rankings["annotator_id"].unique())
        sets = {review_set.pk: review_set for review_set in ReviewSet.objects.filter(
            pk__in=kept[irr.ITEM].tolist()).select_related("image").prefetch_related("reviews")}
        kept_rankings = rankings[rankings["item_id"].isin(kept[irr.ITEM])].sort_values(
            ["item_id", "annotator_id", "prompt_rank"])
        by_item = {item: frame for item, frame in kept_rankings.groupby("item_id", sort=False)}
        for record in kept.itertuples(index=False):
            item_id = int(getattr(record, irr.ITEM))
            review_set = sets[item_id]
            reviews = sorted(review_set.reviews.all(), key=lambda review: review.prompt_rank)
            frame = by_item[item_id]
            annotators, ranks = [], []
            for annotator, given in frame.groupby("annotator_id", sort=True):
                by_prompt = dict(zip(given["prompt_rank"].astype(int), given["rank"].astype(int)))
                annotators.append(names[int(annotator)])
                ranks.append([by_prompt.get(review.prompt_rank) for review in reviews])
            items_table.add({
                "item_id": item_id, "external_id": review_set.external_id, "language": review_set.language,
                "category": review_set.category, "image": self._image_url(review_set.image),
                "reviews": [review.text for review in reviews], "annotators": annotators, "human_ranks": ranks,
                "best_pair": [names[int(record.annotator_a)], names[int(record.annotator_b)]],
                "best_pair_rho": float(record.best_rho),
            })
            for row in frame.itertuples(index=False):
                rankings_table.add({
                    "item_id": item_id, "language": row.language, "worker": names[int(row.annotator_id)],
                    "prompt_rank": int(row.prompt_rank), "rank": int(row.rank),
                })
        return len(kept), len(kept_rankings), result

    # judgments

    def _write_battles(self) -> int:
        table = self._table("battles")
        frames = [pairwise_battles(round_) for round_ in self._rounds("battles")]
        frames = [frame for frame in frames if not frame.empty]
        if not frames:
            self.battles = pd.DataFrame()
            return 0
        battles = pd.concat(frames, ignore_index=True)
        released = set(self.instances.filter(pk__in=battles["instance_id"].unique()).values_list("pk", flat=True))
        battles = battles[~battles["is_gold"] & battles["instance_id"].isin(released)]
        battles = battles.sort_values(["submitted_at", "assignment_id"], kind="stable")
        names = self._worker_pseudonyms(battles["worker_id"].unique())
        for row in battles.itertuples(index=False):
            table.add({
                "instance_id": int(row.instance_id), "instruction_category": row.category,
                "model_a": row.model_a, "model_b": row.model_b, "winner": row.winner, "left": row.left,
                "worker": names[int(row.worker_id)], "submitted_at": row.submitted_at.isoformat(),
                "duration_seconds": None if pd.isna(row.duration_seconds) else float(row.duration_seconds),
            })
        self.battles = battles
        return len(battles)

    def _write_verifications(self) -> int:
        table = self._table("verifications")
        verdicts = verification_judgments(project=self.project)
        if not verdicts.empty:
            released = set(self.instances.filter(pk__in=verdicts["instance_id"].unique()).values_list("pk", flat=True))
            verdicts = verdicts[verdicts["instance_id"].isin(released)]
            verdicts = verdicts.sort_values(["submitted_at", "assignment_id"], kind="stable")
        names = self._worker_pseudonyms(set(verdicts["worker_id"]))
        for row in verdicts.itertuples(index=False):
            table.add({
                "instance_id": int(row.instance_id), "candidate_model": row.candidate_model, "outcome": row.outcome,
                "harmful": bool(row.harmful), "worker": names[int(row.worker_id)],
                "submitted_at": row.submitted_at.isoformat(),
                "duration_seconds": None if pd.isna(row.duration_seconds) else float(row.duration_seconds),
            })
        return len(verdicts)

    # statistics

    def _statistics(self, counts: dict) -> dict:
        families = self.instances.values("family").distinct().count()
        summary = {
            "instruction families": families,
            "instances (single-image)": counts["instances_by_split"][SINGLE_IMAGE],
            "instances (multi-image)": counts["instances_by_split"][MULTI_IMAGE],
            "IRR items kept": counts["irr_items"],
            "pairwise judgments": counts["battles"],
            "verifications": counts["verifications"],
            "IRR ranking rows": counts["rankings"],
            "workers": counts["workers"],
            "images included": counts["images"] - counts["images_excluded"],
            "images left out (license)": counts["images_excluded"],
        }
        agreement: dict[str, object] = {}
        result = self.irr_agreement
        if result is not None:
            evaluable = result.evaluable
            agreement["IRR items ranked"] = int(len(result.best_rho))
            agreement["IRR items with an annotator pair"] = int(evaluable.sum())
            agreement[f"IRR items kept (best-pair rho >= {self.threshold:g})"] = int(result.kept.sum())
            if result.kept.any():
                agreement["IRR mean best-pair rho of kept items"] = round(float(result.best_rho[result.kept].mean()), 3)
        if not self.battles.empty:
            votes = majority_vote(self.battles.rename(columns={"item_id": "pair_id", "winner": "choice"}),
                                  worker_column=None)
            for level, pairs in votes.level_counts().items():
                if pairs:
                    agreement[f"pairs with majority {level}"] = int(pairs)
        if not agreement:
            agreement["(no crowd judgments)"] = "-"
        wages = []
        for round_ in CollectionRound.objects.filter(project=self.project).order_by("pk"):
            progress = round_progress(round=round_)
            submitted = progress["judgments_counted"]
            if not submitted:
                continue
            median = progress["median_seconds"]
            wage = progress["effective_hourly_wage"]
            wages.append([
                round_.name, round_.task_type, submitted, "-" if median is None else round(median, 1),
                f"{format_money(round_.reward_per_task, round_.currency)} {round_.currency}",
                "-" if wage is None else f"{format_money(wage, round_.currency)} {round_.currency}/h",
                f"{format_money(round_.target_hourly_wage, round_.currency)} {round_.currency}/h",
            ])
        return {"counts": counts, "summary": summary, "yield": yield_report(project=self.project)["splits"],
                "agreement": agreement, "wages": wages}
