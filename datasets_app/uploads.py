"""Files uploaded from the project board: predictions, IRR review sets, instruction families.

Each upload is checked for size and type, parsed whole, and imported atomically into the project
by the same services the import commands use; a refusal (``UploadRefused``, HTTP 400) names the
file as uploaded, the row and the field, and changes nothing.
"""
from __future__ import annotations

import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from kernel.errors import ServiceError
from kernel.input_checks import HostileInput, parse_json

from .file_errors import InputFileError
from .image_urls import ImportURLChecker
from .licenses import UnknownLicense, normalise_license
from .model_outputs import PredictionRow, PredictionsImportReport, import_prediction_rows, read_predictions_csv
from .models import FamilySeedImage, Image, Instance, InstructionFamily
from .services import ReviewImportReport, import_review_sets_file

SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")
MAX_NAME = 100


class UploadRefused(ServiceError):
    """The uploaded file cannot be imported."""

    status_code = 400


def shown_name(upload) -> str:
    """The uploaded file's name as the messages show it (no folders, no odd characters)."""
    name = SAFE_NAME.sub("_", Path(str(getattr(upload, "name", "") or "upload")).name)[:MAX_NAME]
    return name or "upload"


@contextmanager
def saved_upload(upload, *, suffixes: tuple[str, ...]):
    """The upload in a temporary file named like it, after the size and type checks."""
    name = shown_name(upload)
    if not name.lower().endswith(suffixes):
        raise UploadRefused(f"{name}: expected a {' or '.join(suffixes)} file")
    limit = settings.MAX_DATA_UPLOAD_BYTES
    if upload.size > limit:
        raise UploadRefused(f"{name}: the file is larger than {limit / 2**20:g} MiB")
    if upload.size == 0:
        raise UploadRefused(f"{name}: the file is empty")
    with tempfile.TemporaryDirectory(prefix="crowdbench-upload-") as folder:
        path = Path(folder) / name
        with path.open("wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            yield path
        except InputFileError as error:
            # Name the file as the researcher knows it, not the temporary copy.
            raise UploadRefused(str(error).replace(str(path), name, 1)) from None


@dataclass
class PredictionsUpload:
    """An uploaded predictions CSV, parsed whole; nothing written yet."""

    name: str  # as the messages show it
    models: list[str]
    rows: list[PredictionRow]


def read_predictions_upload(upload) -> PredictionsUpload:
    """Parse a predictions CSV (``instruction``, ``image``/``images`` or ``instance_id``, ``<model>
    prediction`` columns) after the size and type checks; a malformed one is refused naming the
    file, the row and the field."""
    with saved_upload(upload, suffixes=(".csv",)) as path:
        models, rows = read_predictions_csv(path)
    return PredictionsUpload(name=shown_name(upload), models=models, rows=rows)


def import_predictions_upload(*, project, upload) -> PredictionsImportReport:
    """A predictions CSV matched to the project's instances only."""
    return import_parsed_predictions(project=project, predictions=read_predictions_upload(upload))


def import_parsed_predictions(*, project, predictions: PredictionsUpload) -> PredictionsImportReport:
    """Import a parsed predictions upload, matched to the project's instances only; refused (and
    nothing written) when no row matches."""
    report = import_prediction_rows(path=predictions.name, models=predictions.models, rows=predictions.rows,
                                    instances=Instance.objects.filter(family__project=project))
    if not report.matched:
        raise UploadRefused(f"{report.path}: no row matches an instance of this project (by instance_id and "
                            f"instruction, or by instruction and images)")
    return report


def import_review_sets_upload(*, project, upload) -> ReviewImportReport:
    """IRR review sets (CSV or JSONL, images by URL) into the project."""
    with saved_upload(upload, suffixes=(".csv", ".jsonl")) as path:
        # Paths on the server are refused unread: only the command may read those.
        report = import_review_sets_file(path=path, project=project, image_paths=False)
    report.path = shown_name(upload)
    return report


# --- instruction families with their seed example -----------------------------------------------

FAMILY_FIELDS = {"name", "description", "multi_image", "seed_instruction", "seed_response", "seed_image_urls",
                 "license"}
FAMILY_REQUIRED = ("name", "seed_instruction", "seed_response", "seed_image_urls")
MAX_FAMILIES = 1000


@dataclass
class FamilyRecord:
    row: int
    name: str
    description: str
    multi_image: bool
    seed_instruction: str
    seed_response: str
    seed_image_urls: list[str]
    license: str


@dataclass
class FamilyImportReport:
    path: str
    created: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.path}: {len(self.created)} families created ({', '.join(self.created)})"


def _text(name: str, row: int, raw: dict, key: str, *, limit: int, required: bool) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise InputFileError(name, "must be text", row=row, column=key)
    value = value.strip()
    if required and not value:
        raise InputFileError(name, "empty value", row=row, column=key)
    if len(value) > limit:
        raise InputFileError(name, f"longer than {limit} characters", row=row, column=key)
    if any(ord(char) < 32 and char not in "\n\t" for char in value):
        raise InputFileError(name, "contains control characters", row=row, column=key)
    return value


def _license(name: str, row: int, raw: dict) -> str:
    try:
        return normalise_license(_text(name, row, raw, "license", limit=200, required=False))
    except UnknownLicense as exc:
        raise InputFileError(name, exc.message, row=row, column="license") from None


def read_families(name: str, text: str, *, project) -> list[FamilyRecord]:
    """Families as JSON lines: name, description, multi_image (true/false), seed_instruction,
    seed_response, seed_image_urls (list of at most ``MAX_SEED_IMAGES_PER_FAMILY`` http(s) URLs; each
    host is looked up once per upload), license (of the seed images). A name is refused when the file
    repeats it or ``project`` has a family of that name; other projects' names are neither consulted
    nor shown."""
    records, names = [], set()
    check_url = ImportURLChecker()
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InputFileError(name, "the file has no records")
    if len(lines) > MAX_FAMILIES:
        raise InputFileError(name, f"more than {MAX_FAMILIES} families")
    for number, line in lines:
        try:
            # The reader of request bodies: nesting, number and text bounds, the field at fault named.
            raw = parse_json(line)
        except HostileInput as refused:
            raise InputFileError(name, refused.message.rstrip("."), row=number,
                                 column=refused.field[:60] if refused.field else None) from None
        if not isinstance(raw, dict):
            raise InputFileError(name, "a record must be a JSON object", row=number)
        unknown = sorted(set(raw) - FAMILY_FIELDS)
        if unknown:
            raise InputFileError(name, f"unknown field (known: {', '.join(sorted(FAMILY_FIELDS))})", row=number,
                                 column=unknown[0][:60])
        for key in FAMILY_REQUIRED:
            if key not in raw:
                raise InputFileError(name, "missing field", row=number, column=key)
        multi = raw.get("multi_image", False)
        if not isinstance(multi, bool):
            raise InputFileError(name, "must be true or false", row=number, column="multi_image")
        urls = raw["seed_image_urls"]
        if not isinstance(urls, list) or not urls or not all(isinstance(url, str) for url in urls):
            raise InputFileError(name, "must be a non-empty list of image URLs", row=number, column="seed_image_urls")
        most = settings.MAX_SEED_IMAGES_PER_FAMILY
        if len(urls) > most:
            # Before any host is looked up: each lookup may take seconds.
            raise InputFileError(name, f"more than {most} seed images ({len(urls)} given)", row=number,
                                 column="seed_image_urls")
        if len(urls) > 1 and not multi:
            raise InputFileError(name, "several seed images need \"multi_image\": true", row=number,
                                 column="seed_image_urls")
        checked = []
        for url in urls:
            try:
                checked.append(check_url(url))
            except ValueError as error:
                raise InputFileError(name, str(error), row=number, column="seed_image_urls") from None
        record = FamilyRecord(
            row=number, name=_text(name, number, raw, "name", limit=200, required=True),
            description=_text(name, number, raw, "description", limit=5000, required=False),
            multi_image=multi,
            seed_instruction=_text(name, number, raw, "seed_instruction", limit=5000, required=True),
            seed_response=_text(name, number, raw, "seed_response", limit=20000, required=True),
            seed_image_urls=checked, license=_license(name, number, raw),
        )
        if record.name in names or InstructionFamily.objects.filter(project=project, name=record.name).exists():
            raise InputFileError(name, f"a family named {record.name!r} already exists", row=number, column="name")
        names.add(record.name)
        records.append(record)
    return records


def import_families_upload(*, project, upload) -> FamilyImportReport:
    """Instruction families with their seed example (JSON lines, see ``read_families``) into the project."""
    name = shown_name(upload)
    with saved_upload(upload, suffixes=(".jsonl",)) as path:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as error:
            raise InputFileError(str(path), f"not UTF-8 text ({error.reason})") from None
        records = read_families(name, text, project=project)
    report = FamilyImportReport(path=name)
    with transaction.atomic():
        for record in records:
            family = InstructionFamily(
                name=record.name, project=project, description=record.description,
                is_multi_image=record.multi_image, seed_instruction=record.seed_instruction,
                seed_response=record.seed_response,
            )
            family.full_clean()
            family.save()
            for position, url in enumerate(record.seed_image_urls):
                image = Image.objects.filter(project=project, url=url, file="").first() or Image.objects.create(
                    project=project, url=url, license=record.license)
                FamilySeedImage.objects.create(family=family, image=image, position=position)
            report.created.append(family.name)
    return report
