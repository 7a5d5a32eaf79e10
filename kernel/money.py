"""Money: exact decimals, shown in the currency's minor unit.

Every amount of money (rewards, bonuses, fees, budgets, LLM costs) is a ``Decimal``. A stored
amount carries its field's decimal places (``30.00`` for a reward of 30 JPY): ``quantize_money``
and ``format_money`` give it the currency's minor unit (2 places for USD or GBP, none for JPY)
wherever it is shown: pages (the ``money`` template filter), commands and release files. The
database sums money with ``djangokit.money.MoneySum``.
"""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

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


