"""CSV files for people to open: no cell is run as a spreadsheet formula (CSV injection).

Text from workers, uploaders and models reaches CSV files that researchers open in a spreadsheet.
A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula. Following OWASP's "CSV Injection" rule, such a text
cell is written with a single quote ``'`` in front, which spreadsheets show as text; the csv
module quotes every field holding a separator, a quote or a line break, so no text can open a
cell of its own.

Only ``str`` values are touched: numbers stay numbers (a rating of -0.5 is data, not a formula).
JSON Lines and Parquet files keep every value exact; only CSV cells are neutralised.

The mapping is reversible: a text that already begins with quotes followed by one of those
characters gets one more quote, and ``restore_csv_cell`` (used by the importers of the
platform's own CSV files) removes exactly one, so exporting and importing again gives back the
same text.

Every CSV the platform writes for people goes through ``csv_writer``, ``dict_csv_writer`` or
``frame_to_csv``.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from typing import IO, Any

# What a spreadsheet takes for the start of a formula (OWASP): = + - @, tab (0x09), CR (0x0D).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Quotes, then a formula start: the cells that get one more leading quote.
_NEEDS_QUOTE = re.compile(r"'*[=+\-@\t\r]")


def neutralise_csv_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and _NEEDS_QUOTE.match(value):
        return "'" + value
    return value


def restore_csv_cell(value: str) -> str:
    """The text ``neutralise_csv_cell`` was given: one leading ``'`` removed where it added one."""
    if value.startswith("'") and _NEEDS_QUOTE.match(value, 1):
        return value[1:]
    return value


def _has_carriage_return(values: Iterable[Any]) -> bool:
    return any(isinstance(value, str) and "\r" in value for value in values)


class _NeutralisingWriter:
    """Rows with text cells neutralised. The csv module quotes a field holding a separator, a quote
    or a character of the line terminator, but not a lone carriage return when lines end in
    ``\n``; a spreadsheet (and Python's reader) would end the row there, so a row holding one is
    written with every field quoted."""

    def __init__(self, handle: IO[str], make_writer, **options) -> None:
        self._writer = make_writer(handle, **options)
        self._quoted = make_writer(handle, **{**options, "quoting": csv.QUOTE_ALL})

    def _pick(self, values: Iterable[Any]):
        return self._quoted if _has_carriage_return(values) else self._writer

    def writerow(self, row: Iterable[Any]):
        cells = [neutralise_csv_cell(value) for value in row]
        return self._pick(cells).writerow(cells)

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class _NeutralisingDictWriter(_NeutralisingWriter):
    def writeheader(self):
        return self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]):
        cells = {key: neutralise_csv_cell(value) for key, value in row.items()}
        return self._pick(cells.values()).writerow(cells)


def csv_writer(handle: IO[str], **options) -> _NeutralisingWriter:
    """``csv.writer`` whose text cells are neutralised; the header row goes through it too."""
    return _NeutralisingWriter(handle, csv.writer, **options)


def dict_csv_writer(handle: IO[str], fieldnames: list[str], **options) -> _NeutralisingDictWriter:
    """``csv.DictWriter`` whose text cells are neutralised (the header is written as given)."""
    return _NeutralisingDictWriter(handle, csv.DictWriter, fieldnames=fieldnames, **options)


def frame_to_csv(frame, path_or_buffer=None, **options):
    """``DataFrame.to_csv`` with the text cells (and column names) neutralised; numbers unchanged."""
    safe = frame.copy()
    for position in range(safe.shape[1]):
        values = safe.iloc[:, position]
        if values.dtype == object or str(values.dtype) == "string":
            safe.isetitem(position, values.map(neutralise_csv_cell))
    safe.columns = [neutralise_csv_cell(column) for column in safe.columns]
    texts = [safe.iloc[:, position] for position in range(safe.shape[1])
             if safe.iloc[:, position].dtype == object or str(safe.iloc[:, position].dtype) == "string"]
    if any(_has_carriage_return(values) for values in texts) or _has_carriage_return(safe.columns):
        options.setdefault("quoting", csv.QUOTE_NONNUMERIC)  # see _NeutralisingWriter
    return safe.to_csv(path_or_buffer, **options)
