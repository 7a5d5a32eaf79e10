"""IRR review-set files: parsing CSV and JSONL without the database.

One record is one image with five reviews in one language, each written for a prompt rank
1..5 (1 objective and reasonable … 5 subjective and containing an error).

CSV columns: ``item_id, language, category, image_url`` or ``image_path`` (relative to the
file), ``review_1`` … ``review_5`` (the text for each prompt rank), and optionally ``license``,
``creator``, ``source_url``.

JSONL: one object per line with the same keys, where the reviews are either ``review_1`` …
``review_5`` or ``"reviews": [{"prompt_rank": 1, "text": "..."}, ...]`` (or a list of five
texts in prompt-rank order).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from kernel.input_checks import HostileInput, is_blank, parse_json, text_problem

from .file_errors import InputFileError
from .image_urls import ImageURLRefused, ImportURLChecker
from .licenses import UnknownLicense, normalise_license

REVIEW_LEVELS = 5
LANGUAGES = ("en", "ja")
# Fields stored in columns of bounded length (ReviewSet.external_id, Image.license, ...).
MAX_LENGTHS = {"item_id": 200, "category": 200, "license": 200, "creator": 300, "source_url": 1000,
               "image_url": 1000, "image_path": 1000}


class ReviewSetFormatError(InputFileError):
    """A malformed review-set file (CSV or JSON lines)."""


@dataclass
class ReviewSetRecord:
    row_number: int
    item_id: str
    language: str
    category: str
    image_url: str = ""
    image_path: Path | None = None
    reviews: dict[int, str] = field(default_factory=dict)  # prompt rank -> text
    license: str = ""
    creator: str = ""
    source_url: str = ""


def _license(name: str, number: int, value: str) -> str:
    try:
        return normalise_license(value)
    except UnknownLicense as exc:
        raise ReviewSetFormatError(name, exc.message, row=number, column="license") from None


def read_review_sets(path: str | Path, *, image_paths: bool = True) -> list[ReviewSetRecord]:
    """The records of a review-set file. ``image_paths=False`` (files uploaded through the web)
    refuses any ``image_path`` before the server's disk is looked at."""
    path = Path(path)
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ReviewSetFormatError(name, f"cannot open file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ReviewSetFormatError(name, f"not UTF-8 text ({exc.reason})") from exc
    if not text.strip():
        raise ReviewSetFormatError(name, "the file is empty")
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        raw_rows = list(_jsonl_rows(name, text))
    else:
        raw_rows = list(_csv_rows(name, text))
    if not raw_rows:
        raise ReviewSetFormatError(name, "the file has no records")
    check_url = ImportURLChecker()
    records = [_record(name, number, raw, path.parent, check_url, image_paths) for number, raw in raw_rows]
    seen: dict[tuple[str, str], int] = {}
    for record in records:
        key = (record.item_id, record.language)
        if key in seen:
            raise ReviewSetFormatError(
                name, f"item '{record.item_id}' ({record.language}) already appears in row {seen[key]}",
                row=record.row_number, column="item_id",
            )
        seen[key] = record.row_number
    return records


def _csv_rows(name: str, text: str):
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in ("item_id", "language") if c not in (reader.fieldnames or [])]
    if missing:
        raise ReviewSetFormatError(name, f"missing column(s): {', '.join(missing)}", column=missing[0])
    for number, row in enumerate(reader, start=1):
        if None in row:
            raise ReviewSetFormatError(name, "more fields than header columns", row=number)
        yield number, row


def _jsonl_rows(name: str, text: str):
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except HostileInput as refused:
            raise ReviewSetFormatError(name, refused.message, row=number) from None
        if not isinstance(value, dict):
            raise ReviewSetFormatError(name, "each line must be a JSON object", row=number)
        yield number, value


def _text(name, number, raw, key, *, required=True) -> str:
    value = raw.get(key)
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise ReviewSetFormatError(name, problem, row=number, column=key)
    if value is None or (isinstance(value, str) and is_blank(value)):
        if required:
            raise ReviewSetFormatError(name, "missing or empty value", row=number, column=key)
        return ""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ReviewSetFormatError(name, "expected text", row=number, column=key)
    value = str(value).strip()
    limit = MAX_LENGTHS.get(key)
    if limit is not None and len(value) > limit:
        raise ReviewSetFormatError(name, f"longer than {limit} characters ({len(value)} given)", row=number, column=key)
    return value


def _reviews(name: str, number: int, raw: dict) -> dict[int, str]:
    listed = raw.get("reviews")
    if listed is None:
        return {rank: _text(name, number, raw, f"review_{rank}") for rank in range(1, REVIEW_LEVELS + 1)}
    if not isinstance(listed, list) or len(listed) != REVIEW_LEVELS:
        raise ReviewSetFormatError(name, f"expected a list of {REVIEW_LEVELS} reviews", row=number, column="reviews")
    if all(isinstance(entry, str) for entry in listed):
        entries = [{"prompt_rank": rank, "text": text} for rank, text in enumerate(listed, start=1)]
    else:
        entries = listed
    reviews: dict[int, str] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ReviewSetFormatError(name, "each review is an object or a text", row=number, column="reviews")
        rank, text = entry.get("prompt_rank"), entry.get("text")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= REVIEW_LEVELS:
            raise ReviewSetFormatError(
                name, f"prompt_rank must be an integer 1..{REVIEW_LEVELS}, got {rank!r}",
                row=number, column="reviews",
            )
        if rank in reviews:
            raise ReviewSetFormatError(name, f"prompt rank {rank} given twice", row=number, column="reviews")
        if not isinstance(text, str) or is_blank(text):
            raise ReviewSetFormatError(name, f"review {rank} has no text", row=number, column="reviews")
        problem = text_problem(text)
        if problem:
            raise ReviewSetFormatError(name, f"review {rank} {problem}", row=number, column="reviews")
        reviews[rank] = text.strip()
    return reviews


def _record(name: str, number: int, raw: dict, folder: Path, check_url: ImportURLChecker,
            image_paths: bool = True) -> ReviewSetRecord:
    language = _text(name, number, raw, "language")
    if language not in LANGUAGES:
        raise ReviewSetFormatError(
            name, f"language must be one of {', '.join(LANGUAGES)}, got {language!r}",
            row=number, column="language",
        )
    image_url = _text(name, number, raw, "image_url", required=False)
    image_path = _text(name, number, raw, "image_path", required=False)
    if bool(image_url) == bool(image_path):
        raise ReviewSetFormatError(
            name, "give exactly one of image_url and image_path", row=number, column="image_url"
        )
    if image_url:
        try:
            image_url = check_url(image_url)
        except ImageURLRefused as refused:
            raise ReviewSetFormatError(name, str(refused), row=number, column="image_url") from None
    resolved = None
    if image_path and not image_paths:
        # Whether a path exists on the server is not for an uploaded file to find out.
        raise ReviewSetFormatError(name, "an uploaded file gives each image by image_url",
                                   row=number, column="image_path")
    if image_path:
        resolved = (folder / image_path).resolve()
        if not resolved.is_file():
            raise ReviewSetFormatError(name, f"image file not found: {image_path}", row=number, column="image_path")
    return ReviewSetRecord(
        row_number=number,
        item_id=_text(name, number, raw, "item_id"),
        language=language,
        category=_text(name, number, raw, "category", required=False),
        image_url=image_url,
        image_path=resolved,
        reviews=_reviews(name, number, raw),
        license=_license(name, number, _text(name, number, raw, "license", required=False)),
        creator=_text(name, number, raw, "creator", required=False),
        source_url=_text(name, number, raw, "source_url", required=False),
    )
