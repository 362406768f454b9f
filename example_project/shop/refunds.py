"""Staff refund an order from its page (demo of ``services.refund_charge``).

The form carries an idempotency key made when the page was shown, so a
double click or a resubmitted form refunds once. Only staff holding
``django_paycharge.refund_charge`` see the form or may post it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from django_paycharge import services
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge, RefundReason
from django_paycharge.money import format_money

from .models import Order

PERMISSION = "django_paycharge.refund_charge"
REASONS = [(r, RefundReason(r).label) for r in ("customer_request", "duplicate", "fraud")]


def may_refund(request: HttpRequest) -> bool:
    user: Any = request.user
    return bool(user.is_active and user.is_staff and user.has_perm(PERMISSION))


def staff_refund_context(request: HttpRequest, charge: Charge | None) -> dict[str, Any]:
    """The order page's refund section, for staff who may refund; empty for everyone else."""
    if charge is None or not may_refund(request):
        return {}
    left = services.refundable_amount(charge)
    return {
        "staff_refund": {
            "refunds": list(charge.refunds.order_by("-created_on")),
            "refunded": format_money(charge.refunded_amount, charge.charged_currency),
            "left": left,
            "left_text": format_money(left, charge.charged_currency),
            "can_refund": charge.status == "successful" and left > 0,
            "key": uuid.uuid4().hex,
            "reasons": REASONS,
        }
    }


@require_POST
def refund(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    if not may_refund(request):
        raise PermissionDenied
    order = get_object_or_404(Order.objects.select_related("charge"), public_id=public_id)
    if order.charge is None:
        raise PermissionDenied
    key = request.POST.get("key", "")
    if len(key) != 32 or not key.isalnum():
        raise PermissionDenied  # not our form
    try:
        amount = int(request.POST.get("amount", ""))
    except ValueError:
        messages.error(request, _("Enter the amount to refund as a whole number."))
        return redirect("shop:order", public_id=order.public_id)
    try:
        made = services.refund_charge(
            order.charge,
            amount=amount,
            reason=request.POST.get("reason") or None,
            idempotency_key=f"shop-refund-{key}",
            requested_by=request.user.get_username(),
        )
    except PayChargeError as exc:
        if exc.outcome == "unknown":  # not a refusal: the message says not to refund again
            messages.warning(request, str(exc))
        else:
            messages.error(request, _("Not refunded: %(error)s") % {"error": exc})
    else:
        messages.success(
            request,
            _("Refund of %(amount)s: %(status)s.")
            % {
                "amount": format_money(made.amount, made.currency),
                "status": made.get_status_display(),
            },
        )
    return redirect("shop:order", public_id=order.public_id)
