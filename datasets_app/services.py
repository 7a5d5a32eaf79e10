"""Writes to the benchmark data: imports, exports and pipeline bookkeeping."""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from django.core.files.base import ContentFile
from django.db import transaction
from django.utils.translation import gettext as _

from projects.services import unassigned_project

from . import instance_status
from .licenses import normalise_license
from .models import (
    AcceptedReference,
    Caption,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ReferenceCandidate,
    Review,
    ReviewSet,
    Source,
    Verification,
)
from .review_sets_io import ReviewSetFormatError, read_review_sets
from .visitbench_csv import (
    MULTI_IMAGE,
    PUBLISHED_AUTOMATIC_CAPTION_MODEL,
    PUBLISHED_CANDIDATE_MODEL,
    SINGLE_IMAGE,
    VisitBenchFormatError,
    VisitBenchRow,
    read_visitbench_csv,
    write_visitbench_csv,
)

OUTCOME_TO_DISCARD_REASON = {
    Verification.Outcome.CAPTION_PROBLEM: Instance.DiscardReason.CAPTION,
    Verification.Outcome.RESPONSE_PROBLEM: Instance.DiscardReason.RESPONSE,
    Verification.Outcome.NO_OUTCOME: Instance.DiscardReason.UNVERIFIED,
}


@dataclass
class ImportReport:
    path: str
    schema: str
    rows: int
    created: int
    skipped_existing: int
    families_created: int
    images_created: int

    def summary(self) -> str:
        return (
            f"{self.path}: {self.rows} rows ({self.schema.replace('_', '-')}), "
            f"{self.created} instances created, {self.skipped_existing} already present, "
            f"{self.families_created} families and {self.images_created} images created"
        )


def import_visitbench_file(*, path: str | Path, project=None, image_license: str = "") -> ImportReport:
    """Import a published VisIT-Bench CSV into ``project``, atomically and idempotently.

    The whole file is parsed and validated before anything is written, and the writes run in one
    transaction: a bad file changes nothing. Families, instances and images are looked up and
    created within the project only (another project may hold the same sheet), so rows whose
    instance already exists in the project are skipped. Without a project the rows go to the
    project ``unassigned``. ``image_license`` is recorded for new images under its identifier
    (``datasets_app.licenses``; the published sheets carry none per image; VisIT-Bench states
    CC-BY-4.0 for its release), so releases can tell which images they may redistribute; an unknown
    license is refused (``UnknownLicense``) before the file is read.
    """
    image_license = normalise_license(image_license)
    path = str(path)
    schema, rows = read_visitbench_csv(path)
    with transaction.atomic():
        project = project if project is not None else unassigned_project()
        counts = {"created": 0, "skipped": 0, "families": 0, "images": 0}
        families: dict[str, InstructionFamily] = {}
        for row in rows:
            family = families.get(row.family)
            if family is None:
                family, created = InstructionFamily.objects.get_or_create(
                    project=project, name=row.family, defaults={"is_multi_image": row.is_multi_image}
                )
                counts["families"] += created
                families[row.family] = family
            if family.is_multi_image != row.is_multi_image:
                kind = "multi-image" if family.is_multi_image else "single-image"
                raise VisitBenchFormatError(
                    path,
                    f"family '{row.family}' is {kind} but this row says otherwise",
                    row=row.row_number,
                    column="is_multiple_images" if schema == MULTI_IMAGE else "instruction_category",
                )
            key = Instance.compute_content_key(row.family, row.instruction, row.image_urls)
            if Instance.objects.filter(family=family, content_key=key).exists():
                counts["skipped"] += 1
                continue
            counts["images"] += _create_imported_instance(
                row=row, family=family, content_key=key, image_license=image_license
            )
            counts["created"] += 1
    return ImportReport(
        path=path,
        schema=schema,
        rows=len(rows),
        created=counts["created"],
        skipped_existing=counts["skipped"],
        families_created=counts["families"],
        images_created=counts["images"],
    )


def _create_imported_instance(
    *, row: VisitBenchRow, family: InstructionFamily, content_key: str, image_license: str = ""
) -> int:
    images_created = 0
    outcome = Verification.Outcome(row.verification_outcome) if row.candidate_text is not None else None
    # The published verdict is final: an instance starts verified, or discarded with its reason.
    rejected = outcome is not None and outcome != Verification.Outcome.CORRECT
    instance = instance_status.create_instance(
        family=family,
        instruction=row.instruction,
        source=Source.IMPORTED,
        content_key=content_key,
        dataset_reference=row.dataset_reference,
        images_metadata=row.images_metadata,
        status=Instance.Status.DISCARDED if rejected else Instance.Status.VERIFIED,
        discard_reason=OUTCOME_TO_DISCARD_REASON[outcome] if rejected else "",
    )
    for position, url in enumerate(row.image_urls):
        image, created = Image.objects.get_or_create(
            project_id=family.project_id, url=url, defaults={"license": image_license}
        )
        images_created += created
        InstanceImage.objects.create(instance=instance, image=image, position=position)
    Caption.objects.bulk_create(
        [
            Caption(
                instance=instance,
                position=position,
                kind=Caption.Kind.INSTRUCTION_CONDITIONED,
                text=text,
                source=Source.IMPORTED,
            )
            for position, text in row.dense_captions.items()
        ]
        + [
            Caption(
                instance=instance,
                position=position,
                kind=Caption.Kind.AUTOMATIC,
                text=text,
                model_name=PUBLISHED_AUTOMATIC_CAPTION_MODEL,
                source=Source.IMPORTED,
            )
            for position, text in row.automatic_captions.items()
        ]
    )
    if row.human_reference is not None:
        AcceptedReference.objects.create(
            instance=instance, text=row.human_reference, origin=AcceptedReference.Origin.HUMAN_WRITTEN
        )
    if row.candidate_text is not None:
        candidate = ReferenceCandidate.objects.create(
            instance=instance,
            text=row.candidate_text,
            model_name=PUBLISHED_CANDIDATE_MODEL,
            source=Source.IMPORTED,
        )
        Verification.objects.create(
            candidate=candidate, outcome=outcome, source=Source.IMPORTED, is_aggregate=True
        )
        if outcome == Verification.Outcome.CORRECT:
            AcceptedReference.objects.create(
                instance=instance,
                text=candidate.text,
                origin=AcceptedReference.Origin.VERIFIED_CANDIDATE,
                candidate=candidate,
            )
    return images_created


# --- export ------------------------------------------------------------------------------------


@dataclass
class ExportedInstance:
    """An instance in the published schema (``row``) with what a release adds: its images' license
    facts, its accepted reference's origin and the model behind it."""

    row: VisitBenchRow
    instance_id: int
    language: str
    source: str
    images: list[dict]  # per position: id, url, file, license, creator, source_url
    reference_origin: str | None
    reference_model: str | None


EXPORT_CHUNK_ROWS = 500  # instances per round of queries: memory stays flat, queries stay short


def iter_exported_instances(instances, *, chunk_rows: int = EXPORT_CHUNK_ROWS) -> Iterator[ExportedInstance]:
    """The published-schema view of instances (the inverse of the import), in id order, read in
    chunks of plain values (five short queries per chunk, no model objects)."""
    storage = Image._meta.get_field("file").storage
    ids = instances.order_by("pk").values_list("pk", flat=True)
    last = 0
    while True:
        chunk = list(ids.filter(pk__gt=last)[:chunk_rows])
        if not chunk:
            return
        last = chunk[-1]
        base = Instance.objects.filter(pk__in=chunk).order_by("pk").values(
            "pk", "instruction", "language", "source", "dataset_reference", "images_metadata",
            "family__name", "family__is_multi_image", "accepted_reference__text", "accepted_reference__origin",
            "accepted_reference__candidate__model_name",
        )
        images: dict[int, list[dict]] = {pk: [] for pk in chunk}
        for link in InstanceImage.objects.filter(instance__in=chunk).order_by("instance", "position").values(
                "instance", "image", "image__url", "image__file", "image__license", "image__creator",
                "image__source_url"):
            images[link["instance"]].append({
                "id": link["image"], "url": link["image__url"] or storage.url(link["image__file"]),
                "file": link["image__file"], "license": link["image__license"], "creator": link["image__creator"],
                "source_url": link["image__source_url"],
            })
        captions: dict[tuple[int, str], dict[int, str]] = {}
        for instance_id, kind, position, text in Caption.objects.filter(
                instance__in=chunk, is_current=True).order_by("id").values_list("instance", "kind", "position", "text"):
            captions.setdefault((instance_id, kind), {})[position] = text
        candidates: dict[int, list[tuple[int, str]]] = {}
        for instance_id, candidate_id, text in ReferenceCandidate.objects.filter(instance__in=chunk).order_by(
                "instance", "id").values_list("instance", "id", "text"):
            candidates.setdefault(instance_id, []).append((candidate_id, text))
        verdicts = dict(Verification.objects.filter(
            candidate__instance__in=chunk, is_aggregate=True).values_list("candidate", "outcome"))
        for values in base:
            pk = values["pk"]
            own = candidates.get(pk, [])
            # The candidate that carries the final verdict is the one the file describes.
            judged = [c for c in own if c[0] in verdicts]
            candidate = (judged or own or [None])[-1]
            row = VisitBenchRow(
                row_number=pk,
                family=values["family__name"],
                is_multi_image=values["family__is_multi_image"],
                instruction=values["instruction"],
                image_urls=[image["url"] for image in images[pk]],
                dense_captions=captions.get((pk, Caption.Kind.INSTRUCTION_CONDITIONED), {}),
                automatic_captions=captions.get((pk, Caption.Kind.AUTOMATIC), {}),
                candidate_text=candidate[1] if candidate else None,
                verification_outcome=verdicts.get(candidate[0]) if candidate else None,
                dataset_reference=values["dataset_reference"],
                human_reference=values["accepted_reference__text"],
                images_metadata=values["images_metadata"],
            )
            yield ExportedInstance(
                row=row, instance_id=pk, language=values["language"], source=values["source"], images=images[pk],
                reference_origin=values["accepted_reference__origin"],
                reference_model=values["accepted_reference__candidate__model_name"],
            )


def iter_visitbench_rows(*, schema: str, project=None) -> Iterator[VisitBenchRow]:
    instances = Instance.objects.filter(family__is_multi_image=(schema == MULTI_IMAGE))
    if project is not None:
        instances = instances.filter(family__project=project)
    for exported in iter_exported_instances(instances):
        yield exported.row


def export_visitbench(*, handle: IO[str], schema: str, project=None) -> int:
    """Write every instance of one split (of ``project``, when given) in its published schema;
    returns the row count."""
    if schema not in (SINGLE_IMAGE, MULTI_IMAGE):
        raise ValueError(f"unknown schema {schema!r}")
    return write_visitbench_csv(handle, schema, iter_visitbench_rows(schema=schema, project=project))


# --- images ------------------------------------------------------------------------------------

# Formats a worker may upload; the stored extension comes from what Pillow detects, not the name.
ALLOWED_IMAGE_FORMATS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp"}
# One decoding budget for every image: all of an animation's frames together count against
# MAX_IMAGE_PIXELS, so a small file of many large frames cannot make the re-encoding hold gigabytes.
# Frames are also bounded in number, since each costs a copy even when small.
MAX_IMAGE_FRAMES = 100
JPEG_QUALITY = 95
# Facts about the pixels (not about the person, the camera or the place) that a stored image may keep.
HARMLESS_INFO = {
    "JPEG": {"jfif", "jfif_version", "jfif_unit", "jfif_density", "dpi", "progressive", "progression",
             "adobe", "adobe_transform"},
    "PNG": {"dpi", "gamma", "transparency", "aspect", "srgb", "chromaticity", "interlace"},
    "GIF": {"version", "background", "duration", "loop", "transparency"},
    "WEBP": {"loop", "duration", "background", "timestamp"},
}
PNG_PIXEL_CHUNKS = {b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"pHYs",
                    b"sBIT", b"bKGD", b"acTL", b"fcTL", b"fdAT"}


class ImageValidationError(ValueError):
    pass


@dataclass
class CleanImage:
    """Image bytes as stored: validated, orientation applied, without metadata."""

    content: bytes
    format: str
    width: int
    height: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


def _open_checked(content: bytes):
    """The image opened for decoding, after the size, format and pixel-cap checks."""
    from django.conf import settings
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    if not content:
        raise ImageValidationError(_("the file is empty"))
    if len(content) > settings.MAX_IMAGE_UPLOAD_BYTES:
        limit_mb = settings.MAX_IMAGE_UPLOAD_BYTES / (1024 * 1024)
        raise ImageValidationError(_("the file is larger than %(limit)s MB") % {"limit": f"{limit_mb:g}"})
    try:
        with PILImage.open(io.BytesIO(content)) as probe:
            fmt, (width, height) = probe.format, probe.size
            frames = getattr(probe, "n_frames", 1)
            # Checked on the headers, before any pixel is decoded (counting frames reads only their
            # headers).
            if width * height > settings.MAX_IMAGE_PIXELS:
                raise ImageValidationError(
                    _("the image is too large (%(width)d×%(height)d = %(megapixels).1f megapixels; at most "
                      "%(limit)s megapixels are accepted)")
                    % {"width": width, "height": height, "megapixels": width * height / 1e6,
                       "limit": f"{settings.MAX_IMAGE_PIXELS / 1e6:g}"}
                )
            if frames > MAX_IMAGE_FRAMES:
                raise ImageValidationError(_("the animation has more than %(frames)d frames")
                                           % {"frames": MAX_IMAGE_FRAMES})
            if frames * width * height > settings.MAX_IMAGE_PIXELS:
                raise ImageValidationError(
                    _("the animation is too large (%(frames)d frames of %(width)d×%(height)d = "
                      "%(megapixels).1f megapixels in all; at most %(limit)s megapixels are accepted "
                      "across all frames)")
                    % {"frames": frames, "width": width, "height": height,
                       "megapixels": frames * width * height / 1e6,
                       "limit": f"{settings.MAX_IMAGE_PIXELS / 1e6:g}"}
                )
            probe.verify()
        image = PILImage.open(io.BytesIO(content))
        image.load()
    except ImageValidationError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, PILImage.DecompressionBombError) as exc:
        raise ImageValidationError(_("the file is not a readable image")) from exc
    if fmt not in ALLOWED_IMAGE_FORMATS:
        allowed = ", ".join(sorted(ALLOWED_IMAGE_FORMATS))
        raise ImageValidationError(_("image format %(format)s is not accepted (use %(allowed)s)")
                                   % {"format": fmt, "allowed": allowed})
    return image


def image_metadata(content: bytes, image) -> list[str]:
    """What ``content`` carries besides its pixels (EXIF, GPS, XMP, ICC, comments, text chunks,
    bytes after the end of the image); empty when there is nothing to strip."""
    fmt = image.format
    found = sorted(set(image.info) - HARMLESS_INFO[fmt])
    if fmt == "GIF" and image.info.get("extension", (b"",))[0] == b"NETSCAPE2.0":
        found.remove("extension")  # the animation's loop count, which Pillow writes itself
    if fmt == "JPEG":
        for marker, data in getattr(image, "applist", []):
            if not ((marker == "APP0" and data.startswith(b"JFIF")) or (marker == "APP14" and data.startswith(b"Adobe"))):
                found.append(marker)
        if not content.rstrip(b"\0").endswith(b"\xff\xd9"):
            found.append("data after the image")
    elif fmt == "PNG":
        found += [chunk for chunk in _png_chunks(content) if chunk not in PNG_PIXEL_CHUNKS]
    elif fmt == "GIF" and not content.endswith(b";"):
        found.append("data after the image")
    elif fmt == "WEBP" and int.from_bytes(content[4:8], "little") + 8 != len(content):
        found.append("data after the image")
    return [str(item) for item in found]


def _png_chunks(content: bytes) -> list:
    chunks, offset = [], 8
    while offset + 8 <= len(content):
        length = int.from_bytes(content[offset:offset + 4], "big")
        kind = content[offset + 4:offset + 8]
        chunks.append(kind)
        offset += 12 + length
        if kind == b"IEND":
            break
    if offset != len(content):
        chunks.append("data after the image")
    return chunks


def clean_image_bytes(content: bytes) -> CleanImage:
    """Validate image bytes and return them without metadata, orientation applied.

    An image that carries nothing but pixels keeps its bytes (no re-encoding loss), so cleaning is
    idempotent: cleaned bytes cleaned again are the same bytes. Others are re-encoded in their own
    format with Pillow, with colours converted to sRGB when they had an ICC profile.
    """
    image = _open_checked(content)
    with image:
        fmt = image.format
        if not image_metadata(content, image):
            return CleanImage(content=content, format=fmt, width=image.width, height=image.height)
        try:
            encoded, width, height = _reencode(image, fmt)
        except (OSError, ValueError) as exc:
            raise ImageValidationError(_("the image could not be re-encoded without its metadata")) from exc
    return CleanImage(content=encoded, format=fmt, width=width, height=height)


def _reencode(image, fmt: str) -> tuple[bytes, int, int]:
    from PIL import ImageOps, ImageSequence

    animated = getattr(image, "is_animated", False) and fmt in ("GIF", "WEBP")
    duration, loop = image.info.get("duration"), image.info.get("loop", 0)
    transparency = image.info.get("transparency")
    if animated:
        frames = [frame.copy() for frame in ImageSequence.Iterator(image)]
    else:
        frames = [_to_srgb(ImageOps.exif_transpose(image))]
    for frame in frames:
        frame.info = {}  # Pillow writes EXIF, ICC, XMP and comments it finds here
    first = frames[0]
    options: dict = {}
    if fmt == "JPEG":
        if first.mode not in ("RGB", "L", "CMYK"):
            first = first.convert("RGB")
        options = {"quality": JPEG_QUALITY}
    elif fmt == "WEBP":
        options = {"quality": JPEG_QUALITY}
    if transparency is not None and fmt in ("PNG", "GIF") and first.mode in ("P", "L", "RGB"):
        options["transparency"] = transparency
    if animated:
        options.update(save_all=True, append_images=frames[1:], loop=loop)
        if duration is not None:
            options["duration"] = duration
    out = io.BytesIO()
    first.save(out, format=fmt, **options)
    return out.getvalue(), first.width, first.height


def _to_srgb(image):
    """Colours of an image with an embedded ICC profile, converted to sRGB (the profile then goes)."""
    icc = image.info.get("icc_profile")
    if not icc or image.mode not in ("RGB", "RGBA", "L"):
        return image
    try:
        from PIL import ImageCms

        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        return ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB")) or image
    except (OSError, ValueError, ImageCms.PyCMSError):
        return image


def inspect_image_bytes(content: bytes) -> tuple[str, int, int]:
    """Validate bytes as an image; returns (format, width, height) as it would be stored."""
    with _open_checked(content) as image:
        fmt, width, height = image.format, image.width, image.height
        orientation = image.getexif().get(0x0112, 1) if fmt in ("JPEG", "WEBP", "PNG") else 1
    if orientation in (5, 6, 7, 8):  # stored rotated by a quarter turn
        width, height = height, width
    return fmt, width, height


def store_image(
    *, project, content: bytes, license: str, creator: str = "", source_url: str = "", category: str = ""
) -> Image:
    """Validate and store an image file of ``project`` without its metadata; the same stored bytes
    are kept once per project (matched by the SHA-256 of the stored bytes, which is what the image
    records). ``license`` is stored under its identifier; an unknown one is refused (``UnknownLicense``)."""
    license = normalise_license(license)
    clean = clean_image_bytes(content)
    digest = clean.sha256
    existing = Image.objects.filter(project=project, sha256=digest).exclude(file="").first()
    if existing is not None:
        return existing
    image = Image(
        project=project,
        sha256=digest,
        size_bytes=len(clean.content),
        width=clean.width,
        height=clean.height,
        license=license,
        creator=creator,
        source_url=source_url,
        category=category,
    )
    image.file.save(f"{digest[:16]}.{ALLOWED_IMAGE_FORMATS[clean.format]}", ContentFile(clean.content), save=False)
    image.full_clean()
    image.save()
    return image


# --- IRR review sets ---------------------------------------------------------------------------


@dataclass
class ReviewImportReport:
    path: str
    records: int
    created: int
    skipped_existing: int

    def summary(self) -> str:
        return (
            f"{self.path}: {self.records} review sets, {self.created} created, "
            f"{self.skipped_existing} already present"
        )


def import_review_sets_file(*, path: str | Path, project=None, image_paths: bool = True) -> ReviewImportReport:
    """Import IRR review sets (CSV or JSONL) with their images into ``project`` (the project
    ``unassigned`` when none is given), atomically; sets already present in the project are
    skipped, whatever other projects hold.

    Every record, including its image file, is validated before anything is written.
    """
    path = str(path)
    records = read_review_sets(path, image_paths=image_paths)
    image_bytes: dict[int, bytes] = {}
    for record in records:
        if record.image_path is not None:
            content = record.image_path.read_bytes()
            try:
                content = clean_image_bytes(content).content
            except ImageValidationError as exc:
                raise ReviewSetFormatError(path, str(exc), row=record.row_number, column="image_path") from exc
            image_bytes[record.row_number] = content
    created = skipped = 0
    with transaction.atomic():
        project = project if project is not None else unassigned_project()
        for record in records:
            if ReviewSet.objects.filter(project=project, external_id=record.item_id, language=record.language).exists():
                skipped += 1
                continue
            if record.row_number in image_bytes:
                image = store_image(
                    project=project, content=image_bytes[record.row_number], license=record.license,
                    creator=record.creator, source_url=record.source_url, category=record.category,
                )
            else:
                image, _created = Image.objects.get_or_create(
                    project=project, url=record.image_url,
                    defaults=dict(license=record.license, creator=record.creator,
                                  source_url=record.source_url, category=record.category),
                )
            review_set = ReviewSet.objects.create(
                external_id=record.item_id, project=project, image=image, category=record.category,
                language=record.language, source=Source.IMPORTED,
            )
            Review.objects.bulk_create(
                Review(review_set=review_set, prompt_rank=rank, text=text)
                for rank, text in sorted(record.reviews.items())
            )
            created += 1
    return ReviewImportReport(path=path, records=len(records), created=created, skipped_existing=skipped)
