"""How the shop sells a subscription: the sign-up order's checkout creates it, exactly once.

- :func:`subscribe_order` creates the subscription through the app's services with the
  order's amount and the product's period (never the browser's), and the idempotency key
  of the order's current attempt (:func:`attempt_key`): a double submit or two tabs make
  one subscription at most;
- its first charge is waited for (``services.subscription_first_charge``): a card that
  asks for 3-D Secure sends the customer through the app's payment page and 3-D Secure
  return, as a one-off charge does; a konbini payment shows its instructions on the order
  page (the order waits for the store payment);
- the first payment, and each renewal after it, are heard by ``shop/renewals.py``.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.http import HttpRequest
from django.urls import reverse

from django_paycharge import services
from django_paycharge.access import grant_charge_access
from django_paycharge.exceptions import PayChargeError
from django_paycharge.models import Charge, Subscription, SubscriptionRequest

from .models import Order, metadata_number

logger = logging.getLogger("shop.subscribe")

#: The subscription's (and so each of its charges') metadata key naming the sign-up order.
ORDER_KEY = "subscription_order"
ATTEMPT_KEY = "attempt"


def _key(order: Order) -> str:
    return f"shop-order-{order.pk}-subscribe-{order.subscription_attempt}"


def attempt_key(order: Order) -> str:
    """The idempotency key of the order's current sign-up attempt.

    The attempt stays the same while its request may have made a subscription (being
    sent, or made): the same token joins it, another is refused
    (``IdempotencyKeyReusedError``). A new attempt starts once the last one is known to
    have made nothing (refused, or never sent) or its first payment failed (the order is
    ``failed``). The number moves by a conditional update, so two tabs starting again at
    once share the new attempt.
    """
    last = SubscriptionRequest.objects.filter(idempotency_key=_key(order)).first()
    failed = (SubscriptionRequest.State.FAILED, SubscriptionRequest.State.NOT_SENT)
    if last is not None and (last.state in failed or order.status == Order.Status.FAILED):
        current = Order.objects.filter(pk=order.pk, subscription_attempt=order.subscription_attempt)
        services.retry_transient(
            lambda: current.update(subscription_attempt=F("subscription_attempt") + 1)
        )
        order.refresh_from_db(fields=["subscription_attempt"])
    return _key(order)


def signup_order_id(charge: Charge) -> int | None:
    """The sign-up order named by a subscription's charge (its metadata), if any."""
    return metadata_number((charge.metadata or {}).get(ORDER_KEY))


def subscribe_order(
    request: HttpRequest, order: Order, transaction_token_id: str, payment_type: str | None = None
) -> Charge | None:
    """Subscribe the customer to the order's product with their ``subscription`` token.

    The answer is normally ``unverified``: the first payment follows, and its webhook
    marks the order paid (``shop/renewals.py``). Returns the first charge when it waits
    for the customer (3-D Secure, or a konbini payment), None otherwise: the caller sends
    a 3-D Secure card to the app's payment page. ``payment_type`` is the one the customer
    chose (a bank transfer is refused by the app before anything is sent). Raises the
    app's :class:`~django_paycharge.exceptions.PayChargeError` subclasses, as
    ``shop.payments.pay_order`` does.
    """
    started = time.monotonic()
    key = attempt_key(order)
    subscription = services.create_subscription(
        transaction_token_id=transaction_token_id,
        payment_type=payment_type,
        amount=order.amount,
        currency=order.currency,
        period=order.product.period,
        # After 3-D Secure the gateway sends the customer back here, as for a charge.
        three_ds_redirect_endpoint=request.build_absolute_uri(reverse("paycharge:three_ds_return")),
        # Copied to each of its charges: the receiver finds the order even before the
        # subscription is attached below (the first payment's webhook may come first).
        metadata={ORDER_KEY: order.pk, ATTEMPT_KEY: order.subscription_attempt},
        idempotency_key=key,
        requested_by=f"shop order {order.pk}",
    )
    attach(order.pk, subscription, order.subscription_attempt)
    left = settings.SHOP_PAY_TIME_LIMIT - (time.monotonic() - started)
    try:
        first = services.subscription_first_charge(subscription, timeout=max(left, 0.0))
        if first is None or first.status != "awaiting":
            return None
        at_store = services.known_payment_type(first) == "konbini"
    except PayChargeError as exc:  # made all the same: its webhooks complete the order
        logger.warning("Order %s: first charge not read (%s)", order.pk, type(exc).__name__)
        return None
    grant_charge_access(request, first)  # the app's payment page opens for this customer
    attempt = order.subscription_attempt
    services.retry_transient(lambda: _await_first(order.pk, first, attempt, at_store))
    return first


def _await_first(order_pk: int, charge: Charge, attempt: int, at_store: bool) -> None:
    """The order shows the first charge that waits for the customer: a konbini payment's
    instructions (the order awaits the store payment), or the way to 3-D Secure."""
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_pk)
        if order.subscription_attempt != attempt or order.status != Order.Status.NEW:
            return  # paid or failed meanwhile (its webhook was first), or a newer attempt
        order.charge = charge
        if at_store:
            order.status = Order.Status.AWAITING
        order.save(update_fields=["charge", "status"])


def attach(order_pk: int, subscription: Subscription, attempt: int) -> None:
    """Make ``subscription`` the order's, if it is the current attempt's.

    A new attempt's subscription starts the order afresh (``new``: its first payment is
    awaited); the one already attached keeps the status its payments gave it. Run again
    through a busy database (the first payment's webhook writes at the same moment).
    """
    services.retry_transient(lambda: _attach_once(order_pk, subscription, attempt))


def _attach_once(order_pk: int, subscription: Subscription, attempt: int) -> None:
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_pk)
        if order.subscription_attempt != attempt or order.subscription_id == subscription.pk:
            return
        order.subscription = subscription
        if order.status != Order.Status.PAID:
            order.status = Order.Status.NEW
        order.save(update_fields=["subscription", "status"])
