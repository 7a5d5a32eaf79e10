"""Money: exact decimals, summed exactly by the database and shown in the currency's minor unit.

Every amount of money (rewards, bonuses, fees, budgets, LLM costs) is a ``Decimal`` read from a
``DecimalField``. Two things would otherwise turn it into a float or show it wrongly:

- SQLite keeps decimals as floating-point numbers, so its ``SUM`` of a money column is a float sum
  (thirty rewards of 0.32 come back as 9.60000000000000, or 9.69999999999999 for other amounts).
  ``MoneySum`` sums a money column exactly on every database: PostgreSQL sums its ``NUMERIC``
  exactly, SQLite sums the column's smallest stored units as integers.
- A stored amount carries the field's decimal places (``30.00`` for a reward of 30 JPY).
  ``quantize_money`` and ``format_money`` give it the currency's minor unit (2 places for USD or
  GBP, none for JPY) wherever it is shown: pages (the ``money`` template filter), commands and
  release files.
"""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Aggregate, DecimalField

# ISO 4217 minor units of the currencies that have other than two decimal places; every other
# currency has two.
MINOR_UNITS = {
    "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
    "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
    "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
}
DEFAULT_MINOR_UNIT = 2


def minor_unit(currency: str) -> int:
    """Decimal places of the currency's minor unit: 2 for USD, GBP, EUR; 0 for JPY."""
    return MINOR_UNITS.get((currency or "").upper(), DEFAULT_MINOR_UNIT)


def quantize_money(amount: Decimal | int | str, currency: str) -> Decimal:
    """``amount`` rounded (half up) to the currency's minor unit. A float is refused: it is not money."""
    if isinstance(amount, float):
        raise TypeError(f"money must be a Decimal, not the float {amount!r}")
    return Decimal(amount).quantize(Decimal(1).scaleb(-minor_unit(currency)), rounding=ROUND_HALF_UP)


def format_money(amount: Decimal | int | str | None, currency: str) -> str:
    """The amount as shown: in the currency's minor unit, without an exponent ("9.60", "90");
    an empty string for None."""
    if amount is None or amount == "":
        return ""
    return format(quantize_money(amount, currency), "f")


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
