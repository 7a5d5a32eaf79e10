"""The one error type for malformed input files: it names the file, the data row and the field."""
from __future__ import annotations

import csv
from typing import IO, Callable, TypeVar

T = TypeVar("T")


class InputFileError(ValueError):
    # How the message names a field: CSV schemas speak of columns, JSON-lines ones of fields.
    field_word = "field"

    def __init__(self, path: str, message: str, *, row: int | None = None, column: str | None = None):
        self.path, self.row, self.column, self.detail = path, row, column, message
        where = [path]
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"{self.field_word} '{column}'")
        super().__init__(f"{', '.join(where)}: {message}")


def parse_csv_file(path: str, parse: Callable[[str, IO[str]], T], error: type[InputFileError] = InputFileError) -> T:
    """Open a UTF-8 CSV file and run ``parse(path, handle)``; unreadable files raise ``error``."""
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise error(path, f"cannot open file: {exc.strerror}") from exc
    with handle:
        try:
            return parse(path, handle)
        except UnicodeDecodeError as exc:
            raise error(path, f"not UTF-8 text ({exc.reason})") from exc
        except csv.Error as exc:
            raise error(path, f"malformed CSV: {exc}") from exc
