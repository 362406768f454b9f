"""The payment page: what the current customer does next to pay one of their charges.

A wallet payment or a card's 3-D Secure: on to the provider or the card issuer
(the issuer token). A convenience-store payment or a bank transfer: what to do,
where and by when (the payment instructions).
"""

from __future__ import annotations

import logging
import uuid

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from ..access import can_access_charge
from ..exceptions import (
    ChargeStateError,
    NotFoundError,
    PayChargeError,
    PaymentDetailsRejectedError,
    UnsupportedPaymentTypeError,
)
from ..models import Charge, ChargeStatus
from ..services import fetch_issuer_token, known_payment_type, payment_instructions
from ..services.charges import INSTRUCTED_TYPES

logger = logging.getLogger("django_paycharge.views")

TEMPLATE = "django_paycharge/payment.html"
UNAVAILABLE_TEMPLATE = "django_paycharge/payment_unavailable.html"
NOT_FOUND_TEMPLATE = "django_paycharge/charge_not_found.html"


def charge_not_found(request: HttpRequest) -> HttpResponse:
    """404 in the app's own page: styled, translated, with the way back to ``SHOP_URL``.

    Used for a charge that does not exist and for one this visitor may not see
    alike, so the page tells nothing about which. Override
    ``django_paycharge/charge_not_found.html`` to change it.
    """
    return render(request, NOT_FOUND_TEMPLATE, status=404)


@never_cache
def payment_page(request: HttpRequest, charge_id: uuid.UUID) -> HttpResponse:
    """Render ``django_paycharge/payment.html``: where the customer pays this charge.

    Only for a charge the current customer may see (see
    :mod:`django_paycharge.access`); anyone else gets :func:`charge_not_found`.
    Override the template to fit the shop's design; it gets ``charge`` and
    ``issuer_token`` (wallets, 3-D Secure) or ``instructions`` (convenience
    stores, bank transfers: a :class:`~django_paycharge.services.PaymentInstructions`).
    """
    charge = Charge.objects.filter(gateway_id=charge_id).first()
    if charge is None or not can_access_charge(request, charge):
        return charge_not_found(request)
    context: dict[str, object] = {"charge": charge}
    try:
        # A new charge's payment type may not be read yet: read it now (once).
        if known_payment_type(charge) in INSTRUCTED_TYPES:
            context["instructions"] = payment_instructions(charge)
        else:
            context["issuer_token"] = fetch_issuer_token(charge)
    except UnsupportedPaymentTypeError:
        return charge_not_found(request)  # a payment type with nothing to do here
    except ChargeStateError as exc:
        # The customer reads the status's label in their language; ``status`` stays the code.
        labels = dict(ChargeStatus.choices)
        label = labels.get(exc.status or "", exc.status)
        context = {
            "charge": charge,
            "status": exc.status,
            "status_label": label,
            "reason": "status",
        }
        return render(request, UNAVAILABLE_TEMPLATE, context, status=409)
    except (NotFoundError, PaymentDetailsRejectedError) as exc:
        # The gateway said no, for good: "try again in a moment" would not help.
        logger.info("Payment page of charge %s: %s (%s)", charge.gateway_id, exc.code, exc)
        context = {"charge": charge, "reason": "rejected"}
        return render(request, UNAVAILABLE_TEMPLATE, context, status=409)
    except PayChargeError as exc:
        logger.warning("Payment page of charge %s: %s", charge.gateway_id, type(exc).__name__)
        context = {"charge": charge, "reason": "gateway"}
        return render(request, UNAVAILABLE_TEMPLATE, context, status=503)
    return render(request, TEMPLATE, context)
