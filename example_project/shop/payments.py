"""How the shop uses django_paycharge: pay an order, follow its charge, send the customer back.

- :func:`pay_order` creates the charge through the app's services, with the
  amount from the order (never from the browser) and the idempotency key of the
  order's current payment attempt (``services.payment_attempt_key``), so a double
  submit or two tabs make one charge at most;
- :func:`on_charge_status_changed` (``charge_status_changed``) marks the order
  paid or failed, whichever way the news came (the customer's return, a
  webhook, a sync);
- :func:`return_url` is ``PAYCHARGE["RETURN_URL_HOOK"]``: after the provider,
  the customer lands on their order page.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.dispatch import receiver
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from django_paycharge import charge_errors, services, signals
from django_paycharge.access import grant_charge_access
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge

from .models import Order, metadata_number
from .subscribe import signup_order_id

logger = logging.getLogger("shop.payments")


_ORDER_STATUS = {
    "successful": Order.Status.PAID,
    "awaiting": Order.Status.AWAITING,
    "failed": Order.Status.FAILED,
    "error": Order.Status.FAILED,
    "canceled": Order.Status.FAILED,
}


def pay_order(
    request: HttpRequest, order: Order, transaction_token_id: str, *, saved: bool = False
) -> Charge:
    """Charge ``order`` with the transaction token the customer's browser created, or with
    their saved card's (``saved``: a ``recurring`` token, ``services.charge_saved_card``).

    The amount and currency are the order's. The gateway sends the customer
    back (online wallets) to ``paycharge:return``, or after 3-D Secure (cards)
    to ``paycharge:three_ds_return``; both refresh the charge and redirect
    through :func:`return_url`. The new charge is waited for
    until it leaves ``pending`` (the gateway's long-polling read), so the
    order page shows the outcome, or the bank account, at once. Raises the app's
    :class:`~django_paycharge.exceptions.PayChargeError` subclasses
    (:class:`~django_paycharge.exceptions.IdempotencyKeyReusedError` when another
    tab is paying the order, or has paid it, with another token).

    The wait gets what creating the charge left of ``SHOP_PAY_TIME_LIMIT``
    seconds (each of its reads has the time left as its time-out), so the
    request ends within that limit unless creating the charge alone takes
    longer; an order still pending then shows as such, and the webhook
    completes it.
    """
    started = time.monotonic()
    create = services.charge_saved_card if saved else services.create_charge
    charge = create(
        transaction_token_id=transaction_token_id,
        amount=order.amount,
        currency=order.currency,
        metadata={"order": order.pk},
        redirect_endpoint=request.build_absolute_uri(reverse("paycharge:return")),
        # After 3-D Secure the gateway sends the customer here (card charges).
        three_ds_redirect_endpoint=request.build_absolute_uri(reverse("paycharge:three_ds_return")),
        ip_address=_client_ip(request),
        # One charge request per attempt: two tabs or a double click share it, and a new
        # attempt starts only once the last one charged nothing (a saved card's too).
        idempotency_key=services.payment_attempt_key(order),
    )
    grant_charge_access(request, charge)
    _attach(order.pk, charge)
    left = settings.SHOP_PAY_TIME_LIMIT - (time.monotonic() - started)
    if charge.status == "pending" and left > 0:
        charge = services.wait_for_charge(charge, timeout=left)
    # The signal receiver normally did this already; applying the freshest state the
    # checkout knows keeps the order right even if that receiver ran and failed
    # elsewhere (a webhook processed at the same moment, say).
    _attach(order.pk, charge)
    return charge


def _client_ip(request: HttpRequest) -> str | None:
    # REMOTE_ADDR only: a header the client can set is no evidence for fraud checks.
    address = request.META.get("REMOTE_ADDR", "")
    return address if address.count(".") == 3 else None


def _attach(order_pk: int, charge: Charge) -> None:
    """Make ``charge`` the order's current charge (unless a newer one already is).

    Run again through a busy database: the charge exists, the order must show it.
    """
    services.retry_transient(lambda: _attach_once(order_pk, charge))


def _attach_once(order_pk: int, charge: Charge) -> None:
    # Lock the order row alone: PostgreSQL refuses FOR UPDATE across the nullable join.
    order = Order.objects.select_for_update().get(pk=order_pk)
    current = order.charge
    # A late event about an earlier attempt must not replace a newer attempt.
    if (
        current is not None
        and current.pk != charge.pk
        and current.created_on is not None
        and charge.created_on is not None
        and current.created_on > charge.created_on
    ):
        return
    order.charge = charge
    _apply_status(order, _order_facing_status(charge))
    order.save(update_fields=["charge", "status", "paid_at"])


def needs_three_ds(charge: Charge) -> bool:
    """A card payment waiting for the customer's 3-D Secure confirmation."""
    return charge.status == "awaiting" and payment_type(charge) == "card"


def payment_type(charge: Charge) -> str:
    """The charge's payment type; a new charge's is read now ("" if the gateway fails us).

    ``create_charge`` leaves it to be read later, off the checkout's path: the
    pages that need it at once (where to send the customer) ask for it here.
    """
    try:
        return services.known_payment_type(charge)
    except PayChargeError as exc:
        logger.warning("Payment type of charge %s not read: %s", charge.gateway_id, exc)
        return ""


def _order_facing_status(charge: Charge) -> str | None:
    # A card awaiting 3-D Secure is not "waiting for your transfer": the order stays new.
    return "pending" if needs_three_ds(charge) else charge.status


def _apply_status(order: Order, charge_status: str | None) -> None:
    if order.status == Order.Status.PAID:
        return  # paid stays paid: a later failed attempt does not unpay it
    new = _ORDER_STATUS.get(charge_status)
    if new is None:
        return
    order.status = new
    if new == Order.Status.PAID:
        order.paid_at = timezone.now()


def order_id_of(charge: Charge) -> int | None:
    """The shop's order id from the charge's metadata (set by :func:`pay_order`)."""
    return metadata_number((charge.metadata or {}).get("order"))


@receiver(signals.charge_status_changed, sender=Charge, dispatch_uid="shop-order-status")
def on_charge_status_changed(sender: Any, charge: Charge, status: str, **kwargs: Any) -> None:
    """Mark the order paid or failed when its charge's status changes."""
    order_pk = order_id_of(charge)
    if order_pk is None or not Order.objects.filter(pk=order_pk).exists():
        return
    _attach(order_pk, charge)
    logger.info("Order %s: charge %s is now %s", order_pk, charge.gateway_id, status)


def return_url(request: HttpRequest, charge: Charge) -> str | None:
    """``RETURN_URL_HOOK``: the order page of the charge's order, or of the sign-up order
    of a subscription's first charge (None: ``RETURN_URL``)."""
    order_pk = order_id_of(charge) or signup_order_id(charge)
    if order_pk is None:
        return None
    public_id = Order.objects.filter(pk=order_pk).values_list("public_id", flat=True).first()
    if public_id is None:
        return None
    return reverse("shop:order", args=[public_id])


def failure_message(charge: Charge | None) -> str:
    """The gateway's reason for a failed charge, in words a customer understands (the app's
    error-code table: never the gateway's English text inside a Japanese sentence)."""
    if charge is None:
        return ""
    return charge_errors.failure_message(charge.status, charge.error)
