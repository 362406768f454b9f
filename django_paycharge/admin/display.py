"""Formatting helpers of the admin: money, statuses, JSON and error codes. Everything escapes."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from .. import conf

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


#: Colours of the status badges (background, text); unknown statuses are grey.
STATUS_COLOURS: dict[str, tuple[str, str]] = {
    "pending": ("#e8eaed", "#3c4043"),
    "awaiting": ("#fff4ce", "#6b4e00"),
    "authorized": ("#dbeafe", "#1e3a8a"),
    "successful": ("#dcfce7", "#14532d"),
    "processed": ("#dcfce7", "#14532d"),
    "failed": ("#fee2e2", "#7f1d1d"),
    "error": ("#fee2e2", "#7f1d1d"),
    "canceled": ("#f3f4f6", "#4b5563"),
    "received": ("#e8eaed", "#3c4043"),
    "processing": ("#dbeafe", "#1e3a8a"),
    "ignored": ("#f3f4f6", "#4b5563"),
}


def status_badge(status: str, label: Any = None) -> SafeString:
    background, colour = STATUS_COLOURS.get(status, ("#f3f4f6", "#4b5563"))
    return format_html(
        '<span class="paycharge-badge paycharge-status-{}" '
        'style="background:{};color:{};padding:2px 8px;border-radius:10px;'
        'font-weight:600;white-space:nowrap">{}</span>',
        status,
        background,
        colour,
        label if label is not None else status,
    )


def test_marker() -> SafeString:
    return format_html(
        '<span class="paycharge-badge paycharge-test" style="background:#f97316;color:#fff;'
        'padding:1px 6px;border-radius:4px;font-weight:700;font-size:0.85em">{}</span>',
        _("TEST"),
    )


def pretty_json(value: Any) -> SafeString:
    """A ``<pre>`` of ``value`` as indented JSON (escaped)."""
    if value is None or value == {} or value == []:
        return format_html('<span class="quiet">{}</span>', _("(none)"))
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return format_html('<pre class="paycharge-json">{}</pre>', text)


def pretty_body(text: str) -> SafeString:
    """A stored request body: indented when it is JSON, as received otherwise (escaped)."""
    try:
        return pretty_json(json.loads(text))
    except ValueError:
        return format_html('<pre class="paycharge-json">{}</pre>', text)


def folded_json(summary: Any, value: Any) -> SafeString:
    return format_html("<details><summary>{}</summary>{}</details>", summary, pretty_json(value))


#: What the gateway's charge error codes mean: the codes its documentation names.
#: ``PAYCHARGE["ADMIN_ERROR_CODES"]`` adds more; unknown codes are shown as they are.
ERROR_CODES: dict[int, Any] = {
    306: _("card declined"),
    330: _("insufficient funds"),
}


def error_code_meaning(code: Any) -> Any:
    try:
        number = int(code)
    except (TypeError, ValueError):
        return None
    extra = conf.get_setting("ADMIN_ERROR_CODES") or {}
    meaning = extra.get(number, extra.get(str(number)))
    return meaning if meaning is not None else ERROR_CODES.get(number)


def describe_error(error: Any) -> SafeString:
    """The charge's error: its code with its meaning, then the whole object, escaped."""
    if not error:
        return format_html('<span class="quiet">{}</span>', _("(none)"))
    code = error.get("code") if isinstance(error, dict) else None
    meaning = error_code_meaning(code)
    if code is None:
        head = format_html("")
    elif meaning is None:
        head = format_html("<p><strong>{}</strong> {}</p>", _("Code"), code)
    else:
        head = format_html("<p><strong>{}</strong> {}: {}</p>", _("Code"), code, meaning)
    return format_html("{}{}", head, pretty_json(error))
