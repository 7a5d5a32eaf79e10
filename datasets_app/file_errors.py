"""The one error type for malformed input files: it names the file, the data row and the field."""
from __future__ import annotations


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
