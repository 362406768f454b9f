"""Signals the app sends. Receivers get ``sender`` (the model class) and keyword arguments.

- ``charge_created(charge)``: a charge was created through :func:`services.create_charge`.
- ``charge_updated(charge, previous_status)``: the mirror of a charge changed.
- ``charge_status_changed(charge, previous_status, status)``: once per real change of status.
- ``charge_returned(charge, request, three_ds)``: the customer came back from the provider
  (``three_ds`` True: from 3-D Secure authentication).
- ``issuer_token_fetched(charge, issuer_token)``: an issuer token was fetched and stored.
- ``webhook_received(delivery)``: a genuine webhook delivery was stored.
- ``charge_captured(charge, amount)``: the gateway accepted a capture (``amount`` None: all of it).
- ``charge_canceled(charge, cancel)``: a cancel of the charge succeeded (once per cancel).
- ``refund_created(refund, charge)``: a refund appeared in the mirror (whichever way it came).
- ``refund_status_changed(refund, charge, previous_status, status)``: once per real change,
  and on creation (``previous_status`` None).
- ``subscription_status_changed(subscription, previous_status, status)``: once per real
  change of a subscription's mirrored status (new row: ``previous_status`` None).
- ``subscription_suspended`` / ``subscription_canceled`` / ``subscription_completed``
  ``(subscription, previous_status)``: once, when the mirror first holds that status.
- ``subscription_renewal_paid(subscription, charge)``: a payment of a subscription (the
  first one included) became ``successful`` in the mirror, once per charge.
- ``subscription_renewal_failed(subscription, charge)``: such a charge became ``failed``
  or ``error``. ``subscription`` is None when the mirror does not hold it yet.
- ``saved_card_replaced(saved_card, previous_token_id)``: a saved card (a ``recurring``
  transaction token, :class:`~django_paycharge.models.TransactionTokenInfo`) renewed by a new
  token, once per new token; ``previous_token_id`` (text) is the token it replaces.
- ``saved_card_deleted(saved_card)``: a saved card was deleted (it can no longer be
  charged), once per token.

Every receiver also gets ``event_id`` (a UUID): the same for every receiver
of one change, and on every run of it, so a receiver can act once.

This module holds the Signal objects only. The services send every one of them
through :func:`django_paycharge.outbox.send`, and only through it: each change
is recorded with the change, and each receiver is run after the commit until it
returns. See docs/signals.md.
"""

from __future__ import annotations

from django.dispatch import Signal

charge_created = Signal()
charge_updated = Signal()
charge_status_changed = Signal()
charge_returned = Signal()
issuer_token_fetched = Signal()
webhook_received = Signal()
charge_captured = Signal()
charge_canceled = Signal()
refund_created = Signal()
refund_status_changed = Signal()
subscription_status_changed = Signal()
subscription_suspended = Signal()
subscription_canceled = Signal()
subscription_completed = Signal()
subscription_renewal_paid = Signal()
subscription_renewal_failed = Signal()
saved_card_replaced = Signal()
saved_card_deleted = Signal()


#: Every signal of the app, by name.
SIGNALS: dict[str, Signal] = {
    "charge_created": charge_created,
    "charge_updated": charge_updated,
    "charge_status_changed": charge_status_changed,
    "charge_returned": charge_returned,
    "issuer_token_fetched": issuer_token_fetched,
    "webhook_received": webhook_received,
    "charge_captured": charge_captured,
    "charge_canceled": charge_canceled,
    "refund_created": refund_created,
    "refund_status_changed": refund_status_changed,
    "subscription_status_changed": subscription_status_changed,
    "subscription_suspended": subscription_suspended,
    "subscription_canceled": subscription_canceled,
    "subscription_completed": subscription_completed,
    "subscription_renewal_paid": subscription_renewal_paid,
    "subscription_renewal_failed": subscription_renewal_failed,
    "saved_card_replaced": saved_card_replaced,
    "saved_card_deleted": saved_card_deleted,
}
