"""Formatting helpers of the admin: money, statuses, JSON and error codes. Everything escapes."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from ..charge_errors import error_code, error_code_meaning
from ..money import currency_exponent
from ..money import format_money as format_money

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
    "stuck": ("#fee2e2", "#7f1d1d"),
    "ignored": ("#f3f4f6", "#4b5563"),
    # Announcements' hearings
    "heard": ("#dcfce7", "#14532d"),
    "running": ("#dbeafe", "#1e3a8a"),
    "retrying": ("#fff4ce", "#6b4e00"),
    "waiting": ("#e8eaed", "#3c4043"),
    "dismissed": ("#f3f4f6", "#4b5563"),
}


#: Colours of the refund badges shown beside a charge's status.
REFUND_COLOURS: dict[str, tuple[str, str]] = {
    "refunded": ("#ede9fe", "#4c1d95"),
    "partially_refunded": ("#fae8ff", "#701a75"),
}


#: How the admin shows a value the gateway did not send, or sent in a form we could not type.
UNKNOWN = _("unknown")


def status_badge(status: str | None, label: Any = None) -> SafeString:
    if not status:
        return format_html('<span class="paycharge-badge quiet">{}</span>', UNKNOWN)
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


def refund_badge(state: str, label: Any) -> SafeString:
    """ "Refunded" or "Partially refunded" beside the status; nothing when neither."""
    if state not in REFUND_COLOURS:
        return SafeString("")
    background, colour = REFUND_COLOURS[state]
    return format_html(
        ' <span class="paycharge-badge paycharge-refund-{}" '
        'style="background:{};color:{};padding:2px 8px;border-radius:10px;'
        'font-weight:600;white-space:nowrap">{}</span>',
        state,
        background,
        colour,
        label,
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
    # JSON can carry half a surrogate pair ("\ud800"), which no page can encode.
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return format_html('<pre class="paycharge-json">{}</pre>', text)


def pretty_body(text: str) -> SafeString:
    """A stored request body: indented when it is JSON, as received otherwise (escaped).

    A body nested too deeply for Python's parser or printer (any stored
    delivery, however hostile, must display) is shown as received.
    """
    try:
        return pretty_json(json.loads(text))
    except (ValueError, RecursionError):
        return format_html('<pre class="paycharge-json">{}</pre>', text)


def folded_json(summary: Any, value: Any) -> SafeString:
    return format_html("<details><summary>{}</summary>{}</details>", summary, pretty_json(value))


def describe_error(error: Any) -> SafeString:
    """The charge's error: its code with its meaning, then the whole object, escaped."""
    if not error:
        return format_html('<span class="quiet">{}</span>', _("(none)"))
    code = error_code(error)
    meaning = error_code_meaning(code)
    if code is None:
        head = SafeString("")
    elif meaning is None:
        head = format_html("<p><strong>{}</strong> {}</p>", _("Code"), code)
    else:
        head = format_html("<p><strong>{}</strong> {}: {}</p>", _("Code"), code, meaning)
    return format_html("{}{}", head, pretty_json(error))


def short_id(value: Any, *, url: str | None = None, charge: bool = False) -> SafeString | str:
    """A UUID as its first 8 characters (what the charge search takes), the whole in the title.

    Full ids wrapped over four lines in the lists; ``charge=True`` marks the
    element with ``data-charge-id`` so tests and scripts can find a charge's row.
    """
    if not value:
        return "-"
    text = str(value)
    attrs = format_html(' data-charge-id="{}"', text) if charge else ""
    if url:
        return format_html(
            '<a href="{}" class="paycharge-id" title="{}"{}>{}…</a>', url, text, attrs, text[:8]
        )
    return format_html('<span class="paycharge-id" title="{}"{}>{}…</span>', text, attrs, text[:8])


def format_major_amount(value: Decimal | None, currency: str | None) -> str:
    """A ``*_formatted`` amount (major units, as the gateway sends it) like :func:`format_money`.

    ``Decimal("2400.0000"), "JPY"`` -> ``"¥2,400"`` (in English), the way the
    integer amount beside it is shown; a value finer than the currency's unit is
    shown whole, with its code.
    """
    if value is None:
        return "-"
    minor = Decimal(value).scaleb(currency_exponent(currency))
    if minor != minor.to_integral_value():
        return f"{value} {(currency or '').upper()}".strip()
    return format_money(int(minor), currency)
