"""What the subscription admin shows: its columns, its page's fields and its scheduled payments.

Each a plain function of a subscription, as :mod:`.charge_fields` is for charges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..models import ScheduledPayment, Subscription
from ..money import format_money
from . import display
from .readonly import ReadOnlyInline

if TYPE_CHECKING:
    _PaymentInlineBase = admin.TabularInline[ScheduledPayment, Subscription]
else:
    _PaymentInlineBase = admin.TabularInline

#: The charges a subscription's page lists (its newest payments' charges).
CHARGES_SHOWN = 50


@admin.display(description=gettext_lazy("subscription id"))
def short_id(subscription: Subscription) -> SafeString | str:
    return display.short_id(subscription.gateway_id)


@admin.display(description=gettext_lazy("status"), ordering="status")
def status_badge(subscription: Subscription) -> SafeString:
    return display.status_badge(subscription.status, subscription.get_status_display())


@admin.display(description=gettext_lazy("amount"))
def amount_text(subscription: Subscription) -> str:
    return format_money(subscription.amount, subscription.currency)


@admin.display(description=gettext_lazy("amount left"))
def amount_left_text(subscription: Subscription) -> str:
    if subscription.amount_left is None:
        return "-"
    return format_money(subscription.amount_left, subscription.currency)


@admin.display(description=gettext_lazy("initial amount"))
def initial_amount_text(subscription: Subscription) -> str:
    if subscription.initial_amount is None:
        return "-"
    return format_money(subscription.initial_amount, subscription.currency)


@admin.display(description=gettext_lazy("period"))
def period_text(subscription: Subscription) -> str:
    return subscription.period_display() or "-"


@admin.display(description=gettext_lazy("metadata"))
def metadata_pretty(subscription: Subscription) -> SafeString:
    return display.pretty_json(subscription.metadata)


@admin.display(description=gettext_lazy("charges"))
def charges_list(subscription: Subscription) -> SafeString | str:
    """The mirrored charges of the subscription, newest first, each linked to its page."""
    charges = subscription.charges().order_by("-created_on", "-id")[:CHARGES_SHOWN]
    rows = [
        (
            reverse("admin:django_paycharge_charge_change", args=[c.pk]),
            c.gateway_id,
            c.get_status_display() or c.status or "-",
            format_money(c.requested_amount, c.requested_currency),
            c.created_on or "-",
        )
        for c in charges
    ]
    if not rows:
        return _("No charge of this subscription is mirrored yet.")
    items = format_html_join("", '<li><a href="{}">{}</a> {} {} ({})</li>', rows)
    return format_html('<ul class="paycharge-subscription-charges">{}</ul>', items)


class ScheduledPaymentInline(ReadOnlyInline, _PaymentInlineBase):
    """The subscription's scheduled payments, as last read from the gateway."""

    model = ScheduledPayment
    view_permission = "django_paycharge.view_subscription"
    fields = ("due_date", "payment_amount", "is_paid", "successful_payment_date", "retry_date")
    readonly_fields = fields
    ordering = ("due_date", "id")

    @admin.display(description=gettext_lazy("amount"))
    def payment_amount(self, payment: ScheduledPayment) -> str:
        return format_money(payment.amount, payment.currency)
