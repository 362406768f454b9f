"""Refunds, cancels and their requests in the admin: read-only lists, and inlines on the charge."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..models import Cancel, Charge, ChargeActionRequest, Refund
from ..money import format_money
from . import display
from .filters import AccountFilter, OutcomeFilter
from .readonly import ReadOnlyAdmin, ReadOnlyInline

if TYPE_CHECKING:
    _RefundInlineBase = admin.TabularInline[Refund, Charge]
    _CancelInlineBase = admin.TabularInline[Cancel, Charge]
    _RequestInlineBase = admin.TabularInline[ChargeActionRequest, Charge]
else:
    _RefundInlineBase = _CancelInlineBase = _RequestInlineBase = admin.TabularInline


def _charge_link(charge: Charge) -> SafeString:
    url = reverse("admin:django_paycharge_charge_change", args=[charge.pk])
    return format_html('<a href="{}">{}…</a>', url, str(charge.gateway_id)[:8])


class RefundInline(ReadOnlyInline, _RefundInlineBase):
    model = Refund
    fields = ("gateway_id", "status", "amount_display", "reason", "message", "created_on")
    readonly_fields = fields
    ordering = ("-created_on",)

    @admin.display(description=gettext_lazy("amount"))
    def amount_display(self, refund: Refund) -> str:
        return format_money(refund.amount, refund.currency)


class CancelInline(ReadOnlyInline, _CancelInlineBase):
    model = Cancel
    fields = ("gateway_id", "status", "error", "created_on")
    readonly_fields = fields
    ordering = ("-created_on",)


def requested_amount(request: ChargeActionRequest) -> str:
    """The amount a request asked for, in its currency (the charge's when it named none)."""
    if request.amount is None:
        return "-"
    params = request.params if isinstance(request.params, dict) else {}
    charge = request.charge
    currency = params.get("currency") or charge.charged_currency or charge.requested_currency
    try:
        return format_money(int(request.amount), currency)
    except (TypeError, ValueError):
        return str(request.amount)


class ActionRequestInline(ReadOnlyInline, _RequestInlineBase):
    model = ChargeActionRequest
    fields = ("kind", "state", "amount_display", "requested_by", "created_at", "attempts", "error")
    readonly_fields = fields
    ordering = ("-created_at",)
    verbose_name_plural = gettext_lazy("captures, cancels and refunds requested here")

    @admin.display(description=gettext_lazy("amount"))
    def amount_display(self, request: ChargeActionRequest) -> str:
        return requested_amount(request)


def _exact_id_search(queryset: QuerySet[Any], term: str) -> QuerySet[Any]:
    try:
        value = uuid.UUID(term.strip())
    except ValueError:
        return queryset.none()
    # The charge's key first (one row of its unique index): OR'ed with the join, the
    # charge's id was checked on every row of the list joined to its charge (PostgreSQL
    # hashed every charge: 39 ms of SQL at 100,000 charges).
    charges = Charge.objects.filter(gateway_id=value).order_by().values_list("pk", flat=True)
    return queryset.filter(Q(gateway_id=value) | Q(charge_id__in=list(charges)))


class _ChildAdmin(ReadOnlyAdmin):
    list_select_related = ("charge",)
    ordering = ("-created_on", "-id")
    search_fields = ("=gateway_id",)
    search_help_text = gettext_lazy("Exact id, or the charge's id.")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        if not search_term.strip():
            return queryset, False
        return _exact_id_search(queryset, search_term), False

    @admin.display(description=gettext_lazy("charge"))
    def charge_link(self, obj: Refund | Cancel) -> SafeString:
        return _charge_link(obj.charge)

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: Refund | Cancel) -> SafeString:
        return display.status_badge(obj.status, obj.get_status_display())

    @admin.display(description=gettext_lazy("error"))
    def error_pretty(self, obj: Refund | Cancel) -> SafeString:
        return display.describe_error(obj.error)

    @admin.display(description=gettext_lazy("metadata"))
    def metadata_pretty(self, obj: Refund | Cancel) -> SafeString:
        return display.pretty_json(obj.metadata)

    @admin.display(description=gettext_lazy("raw payload"))
    def raw_folded(self, obj: Refund | Cancel) -> SafeString:
        return display.folded_json(_("As the gateway last sent it"), obj.raw)


class RefundAdmin(_ChildAdmin):
    list_display = ("gateway_id", "charge_link", "status_badge", "amount_display", "reason",
                    "created_on", "account")  # fmt: skip
    list_filter = (
        "status",
        "reason",
        "mode",
        AccountFilter,
        ("created_on", admin.DateFieldListFilter),
    )
    fields = ("gateway_id", "charge_link", "status_badge", "amount_display", "formatted_display",
              "reason", "message", "error_pretty", "metadata_pretty", "mode", "account",
              "store_id", "created_on", "updated_on", "synced_at", "first_seen_at",
              "raw_folded")  # fmt: skip
    readonly_fields = fields

    @admin.display(description=gettext_lazy("amount"))
    def amount_display(self, refund: Refund) -> str:
        return format_money(refund.amount, refund.currency)

    @admin.display(description=gettext_lazy("amount (formatted)"))
    def formatted_display(self, refund: Refund) -> str:
        # The gateway's major-unit figure, in the one format (not "1500.0000").
        return display.format_major_amount(refund.amount_formatted, refund.currency)


class CancelAdmin(_ChildAdmin):
    list_display = ("gateway_id", "charge_link", "status_badge", "created_on", "account")
    list_filter = ("status", "mode", AccountFilter, ("created_on", admin.DateFieldListFilter))
    fields = ("gateway_id", "charge_link", "status_badge", "error_pretty", "metadata_pretty",
              "mode", "account", "store_id", "created_on", "updated_on", "synced_at",
              "first_seen_at", "raw_folded")  # fmt: skip
    readonly_fields = fields


class ChargeActionRequestAdmin(ReadOnlyAdmin):
    """Who asked for what, and whether the gateway confirmed it (pending: paycharge_recover)."""

    list_display = ("kind", "state", "charge_link", "amount_display", "requested_by",
                    "created_at", "attempts")  # fmt: skip
    list_filter = ("kind", "state", OutcomeFilter, AccountFilter,
                   ("created_at", admin.DateFieldListFilter))  # fmt: skip
    list_select_related = ("charge",)
    ordering = ("-created_at", "-id")
    fields = ("kind", "state", "charge_link", "amount_display", "params", "idempotency_key",
              "requested_by", "refund", "cancel", "attempts", "error", "created_at",
              "updated_at")  # fmt: skip
    readonly_fields = fields

    @admin.display(description=gettext_lazy("charge"))
    def charge_link(self, request: ChargeActionRequest) -> SafeString:
        return _charge_link(request.charge)

    @admin.display(description=gettext_lazy("amount"))
    def amount_display(self, request: ChargeActionRequest) -> str:
        return requested_amount(request)
