"""Money shown in the reader's locale (Babel); ISO-4217's minor units for the arithmetic."""

from __future__ import annotations

from decimal import Decimal

import pytest
from babel.numbers import get_currency_precision
from django.template import Context, Template
from django.utils import translation

from django_paycharge.money import CURRENCY_EXPONENTS, format_money, to_major


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
