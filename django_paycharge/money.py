"""Money as the gateway counts it: integers in minor units, formatted with ``Decimal``.

Arithmetic and storage use ISO-4217's minor units (:data:`CURRENCY_EXPONENTS`,
the gateway's own). Display (:func:`format_money`) goes through Babel for the
reader's locale (symbol, separators, the symbol's place), but keeps ISO's number
of decimals: Babel's precision table (CLDR's) differs from ISO's for some 26
codes (IQD, for instance), and an amount must read the same as it is charged.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

from babel import Locale, UnknownLocaleError
from babel.numbers import format_currency
from django.utils import translation

__all__ = [
    "CURRENCY_EXPONENTS",
    "DEFAULT_EXPONENT",
    "currency_exponent",
    "format_amount",
    "format_money",
    "major_text",
    "to_major",
]

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

    The same in every language, for logs and machine-read text; people read
    :func:`format_money`. Works on the integer minor units with ``Decimal``:
    money never passes through a float.
    """
    if amount is None:
        return "-"
    exponent = currency_exponent(currency)
    text = f"{to_major(amount, currency):,.{exponent}f}"
    return f"{text} {(currency or '').upper()}".strip()


def to_major(amount: int, currency: str | None) -> Decimal:
    """``(1050, "USD")`` -> ``Decimal("10.50")``: exact, with ISO-4217's decimals."""
    return Decimal(int(amount)).scaleb(-currency_exponent(currency))


def major_text(amount: int, exponent: int) -> str:
    """``str(to_major(amount, currency))`` for ``exponent = currency_exponent(currency)``,
    in whole numbers only (an export writes one a cell): ``(1050, 2)`` -> ``"10.50"``,
    ``(-5, 3)`` -> ``"-0.005"``, ``(1000, 0)`` -> ``"1000"``."""
    if not exponent:
        return str(amount)
    digits = str(abs(amount)).rjust(exponent + 1, "0")
    sign = "-" if amount < 0 else ""
    return f"{sign}{digits[:-exponent]}.{digits[-exponent:]}"


_CODE = re.compile(r"[A-Za-z]{3}")
_FRACTION = re.compile(r"\.0+")


def format_money(amount: int | None, currency: str | None, locale: str | None = None) -> str:
    """An amount in minor units as the reader of ``locale`` writes money (Babel).

    The one way the app shows money to people (admin, customer pages, messages,
    commands): ``(1000, "JPY")`` -> ``"￥1,000"`` in Japanese, ``"¥1,000"`` in
    English; ``(1050, "USD", "fr")`` -> ``"10,50 $US"``. ``locale`` defaults to
    the active language. Decimals follow ISO-4217, not Babel. Without a currency
    the minor units cannot be placed (1000 is 1,000 yen or 10.00 dollars): they
    are shown as they are, and said to be so. A currency that is not a
    three-letter code falls back to :func:`format_amount`.
    """
    if amount is None:
        return "-"
    if not currency:
        return translation.gettext("%(amount)s (currency unknown)") % {"amount": f"{amount:,}"}
    if not _CODE.fullmatch(currency):
        return format_amount(amount, currency)
    code = currency.upper()
    babel_locale = _babel_locale(locale or translation.get_language() or "en")
    return format_currency(
        to_major(amount, code),
        code,
        format=_pattern(babel_locale, currency_exponent(code)),
        locale=babel_locale,
        currency_digits=False,
    )


@lru_cache(maxsize=64)
def _babel_locale(language: str) -> Locale:
    try:
        return Locale.parse(translation.to_locale(language))
    except (UnknownLocaleError, ValueError):
        return Locale.parse("en")


@lru_cache(maxsize=256)
def _pattern(locale: Locale, exponent: int) -> str:
    # The locale's own currency pattern, with as many decimals as ISO-4217 says.
    pattern = str(locale.currency_formats["standard"].pattern)
    return _FRACTION.sub("." + "0" * exponent if exponent else "", pattern)
