"""Money as the gateway counts it: integers in minor units, formatted with ``Decimal``."""

from __future__ import annotations

from decimal import Decimal

__all__ = ["CURRENCY_EXPONENTS", "DEFAULT_EXPONENT", "currency_exponent", "format_amount"]

#: ISO-4217 minor-unit exponents that are not 2 (every other currency has 2).
CURRENCY_EXPONENTS: dict[str, int] = {
    # No minor unit.
    "BIF": 0,
    "CLP": 0,
    "DJF": 0,
    "GNF": 0,
    "ISK": 0,
    "JPY": 0,
    "KMF": 0,
    "KRW": 0,
    "PYG": 0,
    "RWF": 0,
    "UGX": 0,
    "UYI": 0,
    "VND": 0,
    "VUV": 0,
    "XAF": 0,
    "XOF": 0,
    "XPF": 0,
    # Thousandths.
    "BHD": 3,
    "IQD": 3,
    "JOD": 3,
    "KWD": 3,
    "LYD": 3,
    "OMR": 3,
    "TND": 3,
    # Ten-thousandths.
    "CLF": 4,
    "UYW": 4,
}
DEFAULT_EXPONENT = 2


def currency_exponent(currency: str | None) -> int:
    """The number of decimals of ``currency`` (2 unless ISO-4217 says otherwise)."""
    return CURRENCY_EXPONENTS.get((currency or "").upper(), DEFAULT_EXPONENT)


def format_amount(amount: int | None, currency: str | None) -> str:
    """``(1000, "JPY")`` -> ``"1,000 JPY"``; ``(1000, "USD")`` -> ``"10.00 USD"``.

    Works on the integer minor units with ``Decimal``: money never passes through a float.
    """
    if amount is None:
        return "-"
    exponent = currency_exponent(currency)
    major = Decimal(int(amount)).scaleb(-exponent)
    text = f"{major:,.{exponent}f}"
    return f"{text} {(currency or '').upper()}".strip()
