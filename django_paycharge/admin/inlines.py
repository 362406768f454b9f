"""The charge page's inlines: its issuer token (account number masked) and its deliveries.

Its refunds, cancels and requests are in :mod:`.refunds`; all are read-only
(:class:`~.readonly.ReadOnlyInline`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy

from ..models import Charge, IssuerToken, WebhookDelivery
from . import display
from .readonly import ReadOnlyInline

# Django's admin classes are generic only to type checkers (django-stubs);
# subscripting them at run time fails without django_stubs_ext.monkeypatch().
if TYPE_CHECKING:
    _IssuerTokenInlineBase = admin.StackedInline[IssuerToken, Charge]
else:
    _IssuerTokenInlineBase = admin.StackedInline


class IssuerTokenInline(ReadOnlyInline, _IssuerTokenInlineBase):
    model = IssuerToken
    verbose_name_plural = gettext_lazy("issuer token")
    _common = (
        "payment_type",
        "call_method",
        "issuer_token",
        "payload_pretty",
        "account_id",
        "branch_code",
        "branch_name",
        "account_holder_name",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        number = "account_number" if can_see_account_numbers(request) else "masked_account_number"
        return [*self._common, number, "fetched_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj)

    @admin.display(description=gettext_lazy("payload"))
    def payload_pretty(self, token: IssuerToken) -> SafeString:
        return display.pretty_json(token.payload)

    @admin.display(description=gettext_lazy("account number"))
    def masked_account_number(self, token: IssuerToken) -> str:
        return token.masked_account_number


# Django's admin classes are generic only to type checkers (django-stubs);
# subscripting them at run time fails without django_stubs_ext.monkeypatch().
if TYPE_CHECKING:
    _DeliveryInlineBase = admin.TabularInline[WebhookDelivery, Charge]
else:
    _DeliveryInlineBase = admin.TabularInline


class WebhookDeliveryInline(ReadOnlyInline, _DeliveryInlineBase):
    model = WebhookDelivery
    view_permission = None  # the delivery log's own, as on its list page
    fields = ("delivery_link", "event", "status", "received_at", "attempts", "last_error")
    readonly_fields = fields
    ordering = ("-received_at",)

    @admin.display(description=gettext_lazy("delivery"))
    def delivery_link(self, delivery: WebhookDelivery) -> SafeString:
        url = reverse("admin:django_paycharge_webhookdelivery_change", args=[delivery.pk])
        return format_html('<a href="{}">{}</a>', url, str(delivery))


def can_see_account_numbers(request: HttpRequest) -> bool:
    return request.user.has_perm("django_paycharge.view_bank_account_number")
