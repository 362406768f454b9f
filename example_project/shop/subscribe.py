"""How the shop sells a subscription: the sign-up order's checkout creates it, exactly once.

- :func:`subscribe_order` creates the subscription through the app's services with the
  order's amount and the product's period (never the browser's), and the idempotency key
  of the order's current attempt (:func:`attempt_key`): a double submit or two tabs make
  one subscription at most;
- the first payment, and each renewal after it, are heard by ``shop/renewals.py``.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest

from django_paycharge import services
from django_paycharge.models import Subscription, SubscriptionRequest

from .models import Order

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


def subscribe_order(request: HttpRequest, order: Order, transaction_token_id: str) -> Subscription:
    """Subscribe the customer to the order's product with their ``subscription`` token.

    The answer is normally ``unverified``: the first payment follows, and its webhook
    marks the order paid (``shop/renewals.py``). Raises the app's
    :class:`~django_paycharge.exceptions.PayChargeError` subclasses, as
    ``shop.payments.pay_order`` does.
    """
    key = attempt_key(order)
    subscription = services.create_subscription(
        transaction_token_id=transaction_token_id,
        amount=order.amount,
        currency=order.currency,
        period=order.product.period,
        # Copied to each of its charges: the receiver finds the order even before the
        # subscription is attached below (the first payment's webhook may come first).
        metadata={ORDER_KEY: order.pk, ATTEMPT_KEY: order.subscription_attempt},
        idempotency_key=key,
        requested_by=f"shop order {order.pk}",
    )
    attach(order.pk, subscription, order.subscription_attempt)
    return subscription


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
