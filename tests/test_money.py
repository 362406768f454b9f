"""Money shown in the reader's locale (Babel); ISO-4217's minor units for the arithmetic."""

from __future__ import annotations

from decimal import Decimal

import pytest
from babel.numbers import get_currency_precision
from django.template import Context, Template
from django.utils import translation

from django_paycharge.money import (
    CURRENCY_EXPONENTS,
    DEFAULT_EXPONENT,
    format_money,
    major_text,
    to_major,
)


@pytest.mark.parametrize(
    ("amount", "currency", "locale", "expected"),
    [
        (1000, "JPY", "ja", "￥1,000"),
        (1000, "JPY", "en", "¥1,000"),
        (1050, "USD", "en", "$10.50"),
        (1050, "usd", "ja", "$10.50"),
        (1050, "EUR", "fr", "10,50\u202f€"),
        (123456, "JPY", "fr", "123\u202f456\xa0JPY"),
        (-250, "EUR", "en", "-€2.50"),
        (None, "JPY", "en", "-"),
    ],
)
def test_format_money_follows_the_locale(amount, currency, locale, expected):
    assert format_money(amount, currency, locale).replace("\xa0€", "\u202f€") == expected


def test_decimals_follow_iso_4217_where_babel_disagrees():
    # CLDR (Babel) shows IQD without decimals; ISO-4217, and the gateway, count thousandths.
    assert get_currency_precision("IQD") != CURRENCY_EXPONENTS["IQD"]
    assert format_money(1234, "IQD", "en").endswith("1.234")
    assert to_major(1234, "IQD") == Decimal("1.234")
    assert format_money(1234, "BHD", "en").endswith("1.234")


@pytest.mark.parametrize("exponent", sorted({*CURRENCY_EXPONENTS.values(), DEFAULT_EXPONENT}))
def test_an_amount_as_text_is_the_decimal_s_text(exponent):
    # The export writes major_text, the rest of the app to_major: the same text.
    codes = [code for code, places in CURRENCY_EXPONENTS.items() if places == exponent] or ["USD"]
    amounts = [*range(-1200, 1200, 7), 0, -1, 10**15 + 7, -(10**15), 10**20, 999_999]
    for amount in amounts:
        assert major_text(amount, exponent) == str(to_major(amount, codes[0])), amount


def test_odd_currencies_fall_back_to_the_plain_form():
    # Without a currency the minor units cannot be placed (5 yen, or 0.05 dollars?): said so.
    assert format_money(5, "", "en") == "5 (currency unknown)"
    assert format_money(1000, None, "en") == "1,000 (currency unknown)"
    assert format_money(5, "J1Y", "en") == "0.05 J1Y"


def test_the_template_filter_uses_the_active_language():
    template = Template("{% load paycharge %}{{ amount|paycharge_amount:'JPY' }}")
    with translation.override("ja"):
        assert template.render(Context({"amount": 1000})) == "￥1,000"
    with translation.override("en"):
        assert template.render(Context({"amount": 1000})) == "¥1,000"
