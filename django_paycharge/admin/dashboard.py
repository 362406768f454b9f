"""The staff dashboard: takings, refunds, failures, open payments and what needs attention.

One page in the admin (``/admin/django_paycharge/dashboard/``), for staff with
``django_paycharge.view_dashboard``. It reads only the mirror: a constant
number of queries whatever the number of charges (:mod:`.dashboard_figures`).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from ..charge_errors import error_code_meaning
from ..models import ChargeMode, ChargeStatus, PaymentType
from ..money import format_money
from . import dashboard_figures, display
from .dashboard_chart import chart
from .problems import show_banner
from .readonly import ReadOnlyAdmin


class DashboardAdmin(ReadOnlyAdmin):
    """Not a list of rows: its "changelist" URL is the dashboard page."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("django_paycharge.view_dashboard")

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.dashboard_view)
        return [path("", view, name="django_paycharge_dashboard_changelist")]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        mode = ChargeMode.TEST if request.GET.get("mode") == ChargeMode.TEST else ChargeMode.LIVE
        figures = dashboard_figures.compute(mode, timezone.get_current_timezone())
        if any(item.key == "owner_problems" and item.count for item in figures.attention):
            show_banner(request)  # what the shop's owner must fix, above everything
        currencies = figures.currencies
        currency = request.GET.get("currency", "").upper()
        if currency not in currencies:
            currency = currencies[0] if currencies else ""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Payments dashboard"),
            "mode": mode,
            "test_mode": mode == ChargeMode.TEST,
            "figures": figures,
            "periods": dashboard_figures.PERIODS,
            "takings": _money_rows(figures.takings, figures.currency_takings),
            "refunds": _money_rows(figures.refunds, figures.currency_refunds),
            "failures": _failure_rows(figures.failures),
            "open_charges": [_open_row(c, figures) for c in figures.open_charges],
            "attention": [
                {
                    "item": item,
                    "url": f"{reverse(item.url_name)}?{item.query}",
                    "amounts": [format_money(v, c) for c, v in item.amounts.items()],
                }
                for item in figures.attention
            ],
            "currency": currency,
            "currencies": currencies,
            "chart": chart(
                figures.days,
                [day.get(currency, 0) for day in figures.daily_takings],
                figures.daily_failures,
                currency,
            )
            if currency
            else None,
            "chart_rows": [
                (day, format_money(taken.get(currency, 0), currency), failed)
                for day, taken, failed in zip(
                    figures.days, figures.daily_takings, figures.daily_failures, strict=True
                )
            ],
            "charges_url": reverse("admin:django_paycharge_charge_changelist"),
        }
        return TemplateResponse(request, "admin/django_paycharge/dashboard.html", context)


def _money_rows(
    by_type: dict[tuple[str, str], dashboard_figures.Totals],
    by_currency: dict[str, dashboard_figures.Totals],
) -> list[dict[str, Any]]:
    """Per currency: a row per payment type, then the currency's total row."""
    labels = dict(PaymentType.choices)
    rows = []
    for currency in dashboard_figures.by_count(by_currency):
        types = sorted(t for c, t in by_type if c == currency)
        for payment_type in types:
            totals = by_type[currency, payment_type]
            label = labels.get(payment_type) or payment_type or display.UNKNOWN
            rows.append(_money_row(currency, label, totals, total=False))
        rows.append(_money_row(currency, _("All payment types"), by_currency[currency], total=True))
    return rows


def _money_row(currency: str, label: Any, totals: Any, *, total: bool) -> dict[str, Any]:
    cells = [
        (format_money(amount, currency), count)
        for amount, count in zip(totals.amounts, totals.counts, strict=True)
    ]
    return {"currency": currency, "label": label, "cells": cells, "total": total}


def _failure_rows(failures: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    statuses = dict(ChargeStatus.choices)
    rows = []
    for (status, code), totals in sorted(failures.items(), key=lambda kv: -kv[1].counts[-1]):
        meaning = error_code_meaning(code)
        if not code:
            reason = _("%(status)s, no error code") % {"status": statuses.get(status, status)}
        elif meaning is None:
            reason = _("Code %(code)s") % {"code": code}
        else:
            reason = f"{code}: {meaning}"
        rows.append({"reason": reason, "counts": totals.counts})
    return rows


def _open_row(charge: Any, figures: dashboard_figures.Figures) -> dict[str, Any]:
    deadline = charge.payment_deadline or charge.capture_at
    return {
        "charge": charge,
        "url": reverse("admin:django_paycharge_charge_change", args=[charge.pk]),
        "amount": format_money(charge.requested_amount, charge.requested_currency),
        "deadline": deadline,
        "overdue": deadline is not None and deadline < timezone.now(),
    }
