"""What the shop does when it hears of a subscription: an order per renewal, and notes.

The app's subscription signals are heard at least once, in no promised order
(docs/subscriptions.md). So each receiver is keyed by what the call names, under a lock
on the sign-up order:

- ``subscription_renewal_paid``: the first paid charge of the sign-up's current attempt
  (its number is in the charge's metadata) pays the sign-up order; every other paid
  charge becomes an order of its own (``renewal_of`` the sign-up), one per charge (a
  unique constraint) however often heard;
- ``subscription_renewal_failed``: a failed first payment fails the sign-up order (the
  customer may try again: a new attempt); a failed renewal notes it on the sign-up order;
- ``subscription_suspended`` / ``_canceled`` / ``_completed``: noted on the sign-up order
  (canceled and completed are final: nothing replaces them).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from django_paycharge import services, signals
from django_paycharge.models import Charge, Subscription

from .models import Order, metadata_number
from .subscribe import ATTEMPT_KEY, ORDER_KEY

logger = logging.getLogger("shop.renewals")
Note = Order.SubscriptionNote
FINAL_NOTES = (Note.CANCELED, Note.COMPLETED)


def _signup_order(charge: Charge | None, subscription: Subscription | None) -> Order | None:
    """The sign-up order, locked: named by the charge's metadata, else by its subscription."""
    metadata = (charge.metadata if charge is not None else None) or {}
    found = Order.objects.select_for_update()
    order_pk = metadata_number(metadata.get(ORDER_KEY))
    if order_pk is None and subscription is not None:
        order_pk = metadata_number((subscription.metadata or {}).get(ORDER_KEY))
    if order_pk is not None:
        return found.filter(pk=order_pk, renewal_of=None).first()
    if charge is not None:
        gateway_id = charge.subscription_id
    elif subscription is not None:
        gateway_id = subscription.gateway_id
    else:
        return None
    return found.filter(subscription__gateway_id=gateway_id, renewal_of=None).first()


def _current_attempt(order: Order, charge: Charge) -> bool:
    """Whether the charge belongs to the sign-up's current attempt (an older one's is not
    the customer's subscription any more)."""
    attempt = metadata_number((charge.metadata or {}).get(ATTEMPT_KEY))
    if attempt is not None:  # the attempt's number travels with its charges
        return attempt == order.subscription_attempt
    return order.subscription is None or order.subscription.gateway_id == charge.subscription_id


def _mirrored(subscription: Subscription | None, charge: Charge) -> Subscription | None:
    if subscription is not None:
        return subscription
    return Subscription.objects.filter(gateway_id=charge.subscription_id).first()


@receiver(signals.subscription_renewal_paid, sender=Subscription, dispatch_uid="shop-renewal-paid")
def on_renewal_paid(
    sender: Any, subscription: Subscription | None, charge: Charge, **kwargs: Any
) -> None:
    """A paid charge of a subscription: the sign-up paid, or an order for the renewal."""
    services.retry_transient(lambda: _renewal_paid(subscription, charge))


def _renewal_paid(subscription: Subscription | None, charge: Charge) -> None:
    with transaction.atomic():
        order = _signup_order(charge, subscription)
        if order is None or not _current_attempt(order, charge):
            return
        now = timezone.now()
        if order.status != Order.Status.PAID:
            # The current attempt's first paid charge (a failed attempt's charge may be there).
            order.charge, order.status, order.paid_at = charge, Order.Status.PAID, now
            order.subscription = _mirrored(subscription, charge) or order.subscription
            order.save(update_fields=["charge", "status", "paid_at", "subscription"])
            logger.info("Order %s: subscription's first payment %s", order.pk, charge.gateway_id)
            return
        if order.charge_id == charge.pk:
            return  # the first payment, heard again
        renewal, made = Order.objects.get_or_create(
            charge=charge,
            renewal_of=order,
            defaults={
                "product": order.product,
                "quantity": order.quantity,
                "amount": charge.charged_amount or charge.requested_amount or order.amount,
                "currency": (charge.charged_currency or order.currency).upper(),
                "status": Order.Status.PAID,
                "paid_at": now,
                "subscription": order.subscription,
            },
        )
        if order.subscription_note == Note.RENEWAL_FAILED:
            order.subscription_note = Note.NONE
            order.save(update_fields=["subscription_note"])
        if made:
            logger.info("Order %s: renewal %s of order %s", renewal.pk, charge.gateway_id, order.pk)


@receiver(
    signals.subscription_renewal_failed, sender=Subscription, dispatch_uid="shop-renewal-failed"
)
def on_renewal_failed(
    sender: Any, subscription: Subscription | None, charge: Charge, **kwargs: Any
) -> None:
    """A declined payment: the sign-up failed (first payment), or its renewal noted."""
    services.retry_transient(lambda: _renewal_failed(subscription, charge))


def _renewal_failed(subscription: Subscription | None, charge: Charge) -> None:
    with transaction.atomic():
        order = _signup_order(charge, subscription)
        if order is None or not _current_attempt(order, charge):
            return
        if order.status != Order.Status.PAID:
            order.charge, order.status = charge, Order.Status.FAILED
            order.subscription = _mirrored(subscription, charge) or order.subscription
            order.save(update_fields=["charge", "status", "subscription"])
        elif order.subscription_note == Note.NONE:
            order.subscription_note = Note.RENEWAL_FAILED
            order.save(update_fields=["subscription_note"])


def _note(subscription: Subscription, note: str) -> None:
    with transaction.atomic():
        order = _signup_order(None, subscription)
        if order is None or order.subscription_id not in (None, subscription.pk):
            return
        if order.subscription_note in FINAL_NOTES:
            return
        order.subscription_note = note
        order.save(update_fields=["subscription_note"])


@receiver(signals.subscription_suspended, sender=Subscription, dispatch_uid="shop-sub-suspended")
def on_suspended(sender: Any, subscription: Subscription, **kwargs: Any) -> None:
    services.retry_transient(lambda: _note(subscription, Note.SUSPENDED))


@receiver(signals.subscription_canceled, sender=Subscription, dispatch_uid="shop-sub-canceled")
def on_canceled(sender: Any, subscription: Subscription, **kwargs: Any) -> None:
    services.retry_transient(lambda: _note(subscription, Note.CANCELED))


@receiver(signals.subscription_completed, sender=Subscription, dispatch_uid="shop-sub-completed")
def on_completed(sender: Any, subscription: Subscription, **kwargs: Any) -> None:
    services.retry_transient(lambda: _note(subscription, Note.COMPLETED))


@receiver(signals.subscription_status_changed, sender=Subscription, dispatch_uid="shop-sub-resumed")
def on_status_changed(sender: Any, subscription: Subscription, status: str, **kwargs: Any) -> None:
    """Resumed (suspended to unpaid or current): the suspension note goes."""
    if status in ("current", "unpaid"):
        services.retry_transient(lambda: _clear_suspension(subscription))


def _clear_suspension(subscription: Subscription) -> None:
    with transaction.atomic():
        order = _signup_order(None, subscription)
        if order is not None and order.subscription_note == Note.SUSPENDED:
            order.subscription_note = Note.NONE
            order.save(update_fields=["subscription_note"])
