"""The dashboard's chart of daily takings and failures: an SVG drawn on the server.

No script and no library: the page reads the same with JavaScript off, and
each bar and point carries a ``<title>`` (its tooltip, read by screen
readers). The figures are also in a table under the chart.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..money import currency_exponent, format_money

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 96, 44, 16, 36
TAKINGS_COLOUR, FAILURES_COLOUR = "#417690", "#ba2121"


def nice_ceiling(value: int, step_unit: int = 1) -> int:
    """The smallest 1, 2 or 5 times a power of ten (in ``step_unit``s) at or above ``value``."""
    if value <= 0:
        return step_unit
    scale = step_unit
    while True:
        for factor in (1, 2, 5):
            if factor * scale >= value:
                return factor * scale
        scale *= 10


def chart(days: list[date], takings: list[int], failures: list[int], currency: str) -> SafeString:
    """Bars of ``takings`` (minor units of ``currency``) and a line of ``failures``, per day."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    # The axis steps in whole major units: no tick of 0.5 yen or 0.03 dollars.
    top = nice_ceiling(max(takings, default=0), 10 ** currency_exponent(currency))
    top_failures = nice_ceiling(max(failures, default=0))
    slot = plot_w / max(len(days), 1)
    parts: list[SafeString] = [_grid(top, top_failures, currency, plot_w, plot_h)]
    points = []
    for n, (day, amount, failed) in enumerate(zip(days, takings, failures, strict=True)):
        x = LEFT + n * slot
        height = plot_h * amount / top
        label = date_format(day, "MONTH_DAY_FORMAT")
        parts.append(_bar(x, slot, TOP + plot_h - height, height, label, amount, currency))
        cx, cy = x + slot / 2, TOP + plot_h - plot_h * failed / top_failures
        points.append((cx, cy, label, failed))
        if n % 5 == (len(days) - 1) % 5:  # every fifth day, today included
            parts.append(
                format_html(
                    '<text x="{}" y="{}" text-anchor="middle" class="paycharge-axis">{}</text>',
                    _num(cx),
                    HEIGHT - BOTTOM + 16,
                    label,
                )
            )
    parts.append(_failure_line(points))
    title = _("Daily takings in %(currency)s and failed payments, last %(days)d days") % {
        "currency": currency,
        "days": len(days),
    }
    return format_html(
        '<svg class="paycharge-chart" role="img" viewBox="0 0 {} {}" width="100%" '
        'xmlns="http://www.w3.org/2000/svg" aria-labelledby="paycharge-chart-title">'
        '<title id="paycharge-chart-title">{}</title>{}</svg>',
        WIDTH,
        HEIGHT,
        title,
        format_html_join("", "{}", ((p,) for p in parts)),
    )


def _bar(
    x: float, slot: float, y: float, height: float, label: str, amount: int, currency: str
) -> SafeString:
    """One day's takings: a bar in its slot, titled with the day and the amount."""
    return format_html(
        '<rect class="paycharge-bar" x="{}" y="{}" width="{}" height="{}" fill="{}">'
        "<title>{}: {}</title></rect>",
        _num(x + slot * 0.15),
        _num(y),
        _num(slot * 0.7),
        _num(height),
        TAKINGS_COLOUR,
        label,
        format_money(amount, currency),
    )


def _grid(top: int, top_failures: int, currency: str, plot_w: float, plot_h: float) -> SafeString:
    lines = []
    for step in range(5):
        y = TOP + plot_h - plot_h * step / 4
        lines.append(
            format_html(
                '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#ddd"/>'
                '<text x="{}" y="{}" text-anchor="end" class="paycharge-axis">{}</text>'
                '<text x="{}" y="{}" class="paycharge-axis" fill="{}">{}</text>',
                LEFT,
                LEFT + plot_w,
                _num(y),
                _num(y),
                LEFT - 6,
                _num(y + 4),
                format_money(int(Decimal(top) * step / 4), currency),
                LEFT + plot_w + 6,
                _num(y + 4),
                FAILURES_COLOUR,
                _failure_tick(top_failures, step),
            )
        )
    return format_html_join("", "{}", ((line,) for line in lines))


def _failure_tick(top: int, step: int) -> str:
    value = Decimal(top) * step / 4
    return str(int(value)) if value == int(value) else ""


def _failure_line(points: list[tuple[float, float, str, int]]) -> SafeString:
    path = " ".join(f"{_num(x)},{_num(y)}" for x, y, _label, _n in points)
    dots = format_html_join(
        "",
        '<circle cx="{}" cy="{}" r="3" fill="{}"><title>{}: {}</title></circle>',
        (
            (
                _num(x),
                _num(y),
                FAILURES_COLOUR,
                label,
                ngettext("%(count)d failed payment", "%(count)d failed payments", n) % {"count": n},
            )
            for x, y, label, n in points
        ),
    )
    return format_html(
        '<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>{}',
        path,
        FAILURES_COLOUR,
        dots,
    )


def _num(value: float) -> str:
    return f"{value:.1f}"
