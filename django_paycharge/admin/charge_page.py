"""The charge's change page: its sections, its inlines, and who may capture, cancel and refund.

Plain data and functions that ``ChargeAdmin`` (:mod:`.charges`) calls; the
fields named here are :mod:`.charge_fields`' functions or the model's.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from .. import conf
from ..models import Charge, IssuerToken
from .inlines import IssuerTokenInline, WebhookDeliveryInline
from .refunds import ActionRequestInline, CancelInline, RefundInline

#: The page's sections, before :func:`fieldsets` adds what depends on the charge (typed as
#: Django's stubs type a ModelAdmin's fieldsets, a TypedDict a literal does not infer).
FIELDSETS: Any = (
    (
        None,
        {
            "fields": (
                "gateway_id",
                "status_badge",
                "mode_marker",
                "payment_type",
                "account",
                "store_id",
                "store_name",
                "merchant_name",
                "merchant_transaction_id",
                "created_on",
            )
        },
    ),
    (
        gettext_lazy("Amounts"),
        {
            # Each amount from its minor units, beside the gateway's own formatted
            # figure: the same money, one format (money.format_money).
            "fields": (
                ("amount", "requested_formatted"),
                ("charged", "charged_formatted"),
                ("fee", "fee_formatted"),
                "only_direct_currency",
            )
        },
    ),
    (
        gettext_lazy("Error and metadata"),
        {"fields": ("error_pretty", "metadata_pretty")},
    ),
    (
        gettext_lazy("Token and payment"),
        {
            "fields": (
                "transaction_token_id",
                "token_type",
                "subscription_id",
                "capture_at",
                "descriptor",
                "descriptor_phone_number",
                "three_ds_pretty",
                "redirect_pretty",
            )
        },
    ),
    (
        gettext_lazy("Mirror"),
        {
            "fields": (
                "synced_at",
                "first_seen_at",
                "status_rank",
                "raw_digest_display",
                "raw_folded",
            )
        },
    ),
)
_REFUNDS = (gettext_lazy("Refunds"), {"fields": ("refunded_total", "refundable_total")})

#: Every field of the page that is not a column of the model.
READONLY_FIELDS = (
    "status_badge",
    "mode_marker",
    "amount",
    "charged",
    "fee",
    "error_pretty",
    "metadata_pretty",
    "three_ds_pretty",
    "redirect_pretty",
    "raw_folded",
    "status_rank",
    "raw_digest_display",
    "order",
    "requested_formatted",
    "charged_formatted",
    "fee_formatted",
    "token_type",
    "refunded_total",
    "refundable_total",
)

#: Every inline the page may show, in page order (see :func:`inlines`).
INLINES = (
    IssuerTokenInline,
    WebhookDeliveryInline,
    RefundInline,
    CancelInline,
    ActionRequestInline,
)

#: Permission codenames of the lifecycle actions (``django_paycharge.<codename>``).
ACTION_PERMISSIONS = {
    "capture": "capture_charge",
    "cancel": "cancel_charge",
    "refund": "refund_charge",
}


def fieldsets(charge: Charge | None) -> list[tuple[Any, dict[str, tuple[Any, ...]]]]:
    """The page's sections: the shop's order link first when ``ORDER_URL_HOOK`` is set, and
    the charge's refunds right after its amounts."""
    sections = list(FIELDSETS)
    if conf.get_setting("ORDER_URL_HOOK"):
        name, options = sections[0]
        sections[0] = (name, {**options, "fields": ("order", *options["fields"])})
    if charge is not None:
        sections.insert(2, _REFUNDS)
    return sections


def inlines(charge: Charge | None) -> list[type[Any]]:
    """The inlines of the charge's page: its issuer token only when it has one."""
    if charge is None:
        return [WebhookDeliveryInline]
    shown = list(INLINES)
    if not IssuerToken.objects.filter(charge=charge).exists():
        shown.remove(IssuerTokenInline)
    return shown


def may(request: HttpRequest, action: str) -> bool:
    """Whether the user may ``capture``, ``cancel`` or ``refund`` (or ``call_gateway``)."""
    codename = ACTION_PERMISSIONS.get(action, action)
    return bool(request.user.has_perm(f"django_paycharge.{codename}"))


def change_context(request: HttpRequest) -> dict[str, bool]:
    """What the change page's buttons need to know."""
    return {
        "can_call_gateway": may(request, "call_gateway"),
        "can_capture": may(request, "capture"),
        "can_cancel": may(request, "cancel"),
        "can_refund": may(request, "refund"),
    }
