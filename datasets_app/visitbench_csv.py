"""The two published VisIT-Bench CSV schemas: parsing and writing rows, without the database.

Single-image file (``visit_fully_annotated_example.csv``)::

    image_url, image_dense_caption, instruction_category, instruction, output_human_annotated

Multi-image file (``visit_bench_multi_images.csv``): JSON lists in ``images``,
``images_dense_captions`` (padded with ``NaN`` to ten entries) and ``images_blip2_captions``,
Python-style booleans ``True``/``False``, three ``human_ratings_*`` verification columns and a
JSON object in ``public_images_metadata``.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

from kernel.csv_cells import dict_csv_writer, restore_csv_cell
from kernel.input_checks import HostileInput, is_blank, parse_json, text_problem

from .file_errors import InputFileError, parse_csv_file
from .image_urls import ImageURLRefused, ImportURLChecker

SINGLE_IMAGE_COLUMNS = [
    "image_url",
    "image_dense_caption",
    "instruction_category",
    "instruction",
    "output_human_annotated",
]
MULTI_IMAGE_COLUMNS = [
    "instruction_category",
    "images",
    "is_multiple_images",
    "instruction",
    "gpt4_prediction",
    "images_dense_captions",
    "images_blip2_captions",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
]
# The published multi-image file pads its dense-caption lists to this many entries.
DENSE_CAPTION_SLOTS = 10
PUBLISHED_CANDIDATE_MODEL = "gpt-4"
PUBLISHED_AUTOMATIC_CAPTION_MODEL = "blip2"

# Columns stored in fields of bounded length: the family name (InstructionFamily.name).
COLUMN_MAX_LENGTHS = {"instruction_category": 200}

SINGLE_IMAGE = "single_image"
MULTI_IMAGE = "multi_image"


class VisitBenchFormatError(InputFileError):
    """A malformed VisIT-Bench file; names the file, the data row and the column."""

    field_word = "column"


@dataclass
class VisitBenchRow:
    """One instance as read from either schema (positions follow the image order)."""

    row_number: int
    family: str
    is_multi_image: bool
    instruction: str
    image_urls: list[str]
    dense_captions: dict[int, str]
    automatic_captions: dict[int, str] = field(default_factory=dict)
    candidate_text: str | None = None
    # "correct" / "caption_problem" / "response_problem" / "no_outcome", or None when not rated.
    verification_outcome: str | None = None
    dataset_reference: str = ""
    human_reference: str | None = None
    images_metadata: dict = field(default_factory=dict)


def detect_schema(path: str, header: list[str]) -> str:
    columns = set(header)
    if {"images", "is_multiple_images"} & columns:
        missing = [c for c in MULTI_IMAGE_COLUMNS if c not in columns]
        schema = MULTI_IMAGE
    elif {"image_url", "image_dense_caption"} & columns:
        missing = [c for c in SINGLE_IMAGE_COLUMNS if c not in columns]
        schema = SINGLE_IMAGE
    else:
        raise VisitBenchFormatError(
            path,
            "not a VisIT-Bench file: expected the single-image columns "
            f"({', '.join(SINGLE_IMAGE_COLUMNS)}) or the multi-image columns "
            f"({', '.join(MULTI_IMAGE_COLUMNS)})",
            row=None,
        )
    if missing:
        raise VisitBenchFormatError(
            path, f"missing column(s): {', '.join(missing)}", column=missing[0]
        )
    return schema


def read_visitbench_csv(path: str | Path) -> tuple[str, list[VisitBenchRow]]:
    """Parse a whole file; raises :class:`VisitBenchFormatError` on the first problem."""
    return parse_csv_file(str(path), _read, VisitBenchFormatError)


def _read(path: str, handle: IO[str]) -> tuple[str, list[VisitBenchRow]]:
    reader = csv.DictReader(handle)
    if not reader.fieldnames:
        raise VisitBenchFormatError(path, "the file is empty (no header row)")
    schema = detect_schema(path, list(reader.fieldnames))
    parse = _parse_multi_image_row if schema == MULTI_IMAGE else _parse_single_image_row
    rows = []
    check_url = ImportURLChecker()
    for number, record in enumerate(reader, start=1):
        if None in record:
            raise VisitBenchFormatError(path, "more fields than header columns", row=number)
        rows.append(parse(_Cells(path, number, record, check_url)))
    if not rows:
        raise VisitBenchFormatError(path, "the file has a header but no data rows")
    return schema, rows


class _Cells:
    """Typed access to the cells of one row, raising errors that name row and column."""

    def __init__(self, path: str, row: int, record: dict[str, str | None], check_url: ImportURLChecker):
        self.path, self.row, self.record, self.check_url = path, row, record, check_url

    def error(self, column: str, message: str) -> VisitBenchFormatError:
        return VisitBenchFormatError(self.path, message, row=self.row, column=column)

    def text(self, column: str, *, required: bool = True) -> str:
        value = self.record.get(column)
        if value is None:
            raise self.error(column, "missing value (row has fewer fields than the header)")
        # The platform's own CSV files neutralise formula-like text with one leading "'".
        value = restore_csv_cell(value)
        problem = text_problem(value)
        if problem:
            raise self.error(column, problem)
        if required and is_blank(value):
            raise self.error(column, "empty value")
        limit = COLUMN_MAX_LENGTHS.get(column)
        if limit is not None and len(value.strip()) > limit:
            raise self.error(column, f"longer than {limit} characters ({len(value.strip())} given)")
        return value

    def url(self, column: str, value: str | None = None) -> str:
        value = self.text(column) if value is None else value
        try:
            return self.check_url(value)
        except ImageURLRefused as refused:
            raise self.error(column, str(refused)) from None

    def boolean(self, column: str) -> bool:
        value = self.text(column).strip()
        if value in ("True", "true", "TRUE"):
            return True
        if value in ("False", "false", "FALSE"):
            return False
        raise self.error(column, f"expected True or False, got {value[:40]!r}")

    def json_value(self, column: str):
        raw = self.text(column)
        try:
            return parse_json(raw, allow_nan=True)  # NaN marks missing captions in the published file
        except HostileInput as refused:
            raise self.error(column, refused.message) from None

    def string_list(self, column: str, *, allow_nan: bool = False) -> list[str | None]:
        value = self.json_value(column)
        if not isinstance(value, list):
            raise self.error(column, f"expected a JSON list, got {type(value).__name__}")
        items: list[str | None] = []
        for index, item in enumerate(value):
            if allow_nan and isinstance(item, float) and math.isnan(item):
                items.append(None)
            elif isinstance(item, str):
                items.append(item)
            else:
                raise self.error(column, f"entry {index} is not a string: {item!r}")
        return items


def _parse_single_image_row(cells: _Cells) -> VisitBenchRow:
    return VisitBenchRow(
        row_number=cells.row,
        family=cells.text("instruction_category").strip(),
        is_multi_image=False,
        instruction=cells.text("instruction"),
        image_urls=[cells.url("image_url")],
        dense_captions={0: cells.text("image_dense_caption")},
        human_reference=cells.text("output_human_annotated"),
        verification_outcome=None,
    )


def _parse_multi_image_row(cells: _Cells) -> VisitBenchRow:
    urls = cells.string_list("images")
    if not urls:
        raise cells.error("images", "the list of images is empty")
    urls = [cells.url("images", u) for u in urls]
    dense = cells.string_list("images_dense_captions", allow_nan=True)
    dense_by_position = {i: c for i, c in enumerate(dense) if c is not None}
    if any(i >= len(urls) for i in dense_by_position):
        raise cells.error("images_dense_captions", "more captions than images")
    if not dense_by_position:
        raise cells.error("images_dense_captions", "no caption given")
    automatic = cells.string_list("images_blip2_captions")
    if len(automatic) > len(urls):
        raise cells.error("images_blip2_captions", "more captions than images")
    flags = {
        "correct": cells.boolean("human_ratings_gpt4_correct"),
        "caption_problem": cells.boolean("human_ratings_problem_in_caption"),
        "response_problem": cells.boolean("human_ratings_problem_in_gpt4"),
    }
    chosen = [name for name, value in flags.items() if value]
    if len(chosen) > 1:
        raise cells.error(
            "human_ratings_gpt4_correct",
            "the verification columns are exclusive, but several are True: "
            + ", ".join(chosen),
        )
    metadata = cells.json_value("public_images_metadata")
    if not isinstance(metadata, dict):
        raise cells.error("public_images_metadata", "expected a JSON object")
    return VisitBenchRow(
        row_number=cells.row,
        family=cells.text("instruction_category").strip(),
        is_multi_image=cells.boolean("is_multiple_images"),
        instruction=cells.text("instruction"),
        image_urls=urls,
        dense_captions=dense_by_position,
        automatic_captions=dict(enumerate(automatic)),
        candidate_text=cells.text("gpt4_prediction"),
        verification_outcome=chosen[0] if chosen else "no_outcome",
        dataset_reference=cells.text("reference_output", required=False),
        images_metadata=metadata,
    )


# --- writing ---------------------------------------------------------------------------------


def _json_list(values: list) -> str:
    # As published: json.dumps defaults (ASCII escapes, NaN for missing captions).
    return json.dumps(values)


def _python_bool(value: bool) -> str:
    return "True" if value else "False"


def multi_image_record(row: VisitBenchRow) -> dict[str, str]:
    slots = max(DENSE_CAPTION_SLOTS, len(row.image_urls))
    dense = [row.dense_captions.get(i, math.nan) for i in range(slots)]
    automatic = [row.automatic_captions[i] for i in sorted(row.automatic_captions)]
    outcome = row.verification_outcome
    return {
        "instruction_category": row.family,
        "images": _json_list(row.image_urls),
        "is_multiple_images": _python_bool(row.is_multi_image),
        "instruction": row.instruction,
        "gpt4_prediction": row.candidate_text or "",
        "images_dense_captions": _json_list(dense),
        "images_blip2_captions": _json_list(automatic),
        "reference_output": row.dataset_reference,
        "human_ratings_gpt4_correct": _python_bool(outcome == "correct"),
        "human_ratings_problem_in_caption": _python_bool(outcome == "caption_problem"),
        "human_ratings_problem_in_gpt4": _python_bool(outcome == "response_problem"),
        "public_images_metadata": json.dumps(row.images_metadata),
    }


def single_image_record(row: VisitBenchRow) -> dict[str, str]:
    return {
        "image_url": row.image_urls[0],
        "image_dense_caption": row.dense_captions.get(0, ""),
        "instruction_category": row.family,
        "instruction": row.instruction,
        "output_human_annotated": row.human_reference or "",
    }


def write_visitbench_csv(handle: IO[str], schema: str, rows: Iterator[VisitBenchRow]) -> int:
    columns = MULTI_IMAGE_COLUMNS if schema == MULTI_IMAGE else SINGLE_IMAGE_COLUMNS
    to_record = multi_image_record if schema == MULTI_IMAGE else single_image_record
    # A file for people: a text cell a spreadsheet would run as a formula gets a leading "'"
    # (kernel.csv_cells); reading the file back removes it.
    writer = dict_csv_writer(handle, columns, lineterminator="\n")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow(to_record(row))
        count += 1
    return count
