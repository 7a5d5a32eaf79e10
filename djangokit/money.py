"""Money summed exactly by the database.

SQLite keeps decimals as floating-point numbers, so its ``SUM`` of a money column is a float sum
(thirty rewards of 0.32 come back as 9.60000000000000, or 9.69999999999999 for other amounts).
``MoneySum`` sums a money column exactly on every database: PostgreSQL sums its ``NUMERIC``
exactly, SQLite sums the column's smallest stored units as integers. Rounding and showing an
amount is ``kernel.money``'s.
"""
from __future__ import annotations

from decimal import Decimal

from django.db.models import Aggregate, DecimalField


class _MoneyTotalField(DecimalField):
    """The output of ``MoneySum``: a decimal that no database backend converts (from a float on
    SQLite), since ``MoneySum`` converts its own result."""

    def get_internal_type(self) -> str:
        return "MoneyTotalField"


class MoneySum(Aggregate):
    """``SUM`` of a money column (a ``DecimalField``), exact on every database, with the column's
    decimal places; zero, not None, when there is nothing to sum.

    PostgreSQL sums ``NUMERIC`` exactly. SQLite stores decimals as floats: there each value is scaled
    to the column's smallest unit, rounded to an integer and summed as an integer, exactly.
    """

    function = "SUM"
    name = "MoneySum"
    arity = 1

    def _resolve_output_field(self):
        source = self.get_source_fields()[0]
        if not isinstance(source, DecimalField):
            raise TypeError(f"MoneySum sums a DecimalField, not {type(source).__name__}")
        return _MoneyTotalField(max_digits=None, decimal_places=source.decimal_places)

    @property
    def _places(self) -> int:
        return self.output_field.decimal_places

    def as_sqlite(self, compiler, connection, **extra_context):
        scale = 10 ** self._places
        template = f"%(function)s(CAST(ROUND((%(expressions)s) * {scale}) AS INTEGER))"
        return self.as_sql(compiler, connection, template=template, **extra_context)

    def convert_value(self, value, expression, connection):
        unit = Decimal(1).scaleb(-self._places)
        if value is None:
            return Decimal(0).quantize(unit)
        if connection.vendor == "sqlite":
            return Decimal(int(value)).scaleb(-self._places)
        return Decimal(value).quantize(unit)
