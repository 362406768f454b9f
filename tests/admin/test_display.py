from __future__ import annotations

import pytest

from django_paycharge.admin import display
from django_paycharge.charge_errors import error_code_meaning
from django_paycharge.money import format_amount


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        (1000, "JPY", "1,000 JPY"),
        (1000, "jpy", "1,000 JPY"),
        (1000, "USD", "10.00 USD"),
        (5, "USD", "0.05 USD"),
        (-250, "EUR", "-2.50 EUR"),
        (1234567, "KWD", "1,234.567 KWD"),
        (10**20 + 1, "USD", "1,000,000,000,000,000,000.01 USD"),  # exact: no float
        (0, "KRW", "0 KRW"),
        (None, "USD", "-"),
        (100, "", "1.00"),
    ],
)
def test_format_amount(amount, currency, expected):
    assert format_amount(amount, currency) == expected


def test_error_codes():
    assert error_code_meaning(306) == "card declined"
    assert error_code_meaning("330") == "insufficient funds"
    assert error_code_meaning(12345) is None
    assert error_code_meaning("<b>") is None


def test_describe_error_escapes():
    html = display.describe_error({"code": "<i>", "message": "<script>x</script>"})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<i>" not in html


def test_status_badge_escapes_unknown_statuses():
    html = display.status_badge('"><img src=x onerror=alert(1)>')
    assert "<img" not in html


def test_pretty_body_falls_back_to_text():
    assert "&lt;xml&gt;" in display.pretty_body("<xml>")
    assert "&quot;a&quot;: 1" in display.pretty_body('{"a": 1}')
