"""What the charge admin shows and allows about a charge's later life.

:class:`ChargeLifecycleMixin` (a base of ``ChargeAdmin``) adds the
permissions the capture, cancel and refund actions ask for, their buttons on
the change page, the refunded total, and the refund, cancel and request
inlines.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy

from .. import services
from ..models import Charge
from ..money import format_money
from .refunds import ActionRequestInline, CancelInline, RefundInline

#: Permission codenames of the actions (``django_paycharge.<codename>``).
ACTION_PERMISSIONS = {
    "capture": "capture_charge",
    "cancel": "cancel_charge",
    "refund": "refund_charge",
}
_FIELDS = ("refunded_total", "refundable_total")


class ChargeLifecycleMixin:
    """Mixed into ``ChargeAdmin`` (before its admin base class)."""

    def _may(self, request: HttpRequest, action: str) -> bool:
        codename = ACTION_PERMISSIONS[action]
        return bool(request.user.has_perm(f"django_paycharge.{codename}"))

    def has_capture_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "capture")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "cancel")

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "refund")

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[Any]:
        inlines = list(super().get_inlines(request, obj))  # type: ignore[misc]
        if obj is not None:
            inlines += [RefundInline, CancelInline, ActionRequestInline]
        return inlines

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), *_FIELDS]  # type: ignore[misc]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        fieldsets = list(super().get_fieldsets(request, obj))  # type: ignore[misc]
        if obj is not None:
            # Right after the amounts, whatever else the charge page shows.
            where = min(2, len(fieldsets))
            fieldsets.insert(where, (gettext_lazy("Refunds"), {"fields": _FIELDS}))
        return fieldsets

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {
            "can_capture": self.has_capture_permission(request),
            "can_cancel": self.has_cancel_permission(request),
            "can_refund": self.has_refund_permission(request),
            **(extra_context or {}),
        }
        response: HttpResponse = super().change_view(  # type: ignore[misc]
            request, object_id, form_url, context
        )
        return response

    @admin.display(description=gettext_lazy("refunded"))
    def refunded_total(self, charge: Charge) -> str:
        return format_money(charge.refunded_amount, charge.charged_currency)

    @admin.display(description=gettext_lazy("left to refund"))
    def refundable_total(self, charge: Charge) -> str:
        return format_money(services.refundable_amount(charge), charge.charged_currency)
