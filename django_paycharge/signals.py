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

Every receiver also gets ``event_id`` (a UUID): the same for every receiver
of one change, and on every run of it, so a receiver can act once.

The app sends every one of them through :func:`send`, and only through it:
each change is recorded with the change, and each receiver is run after the
commit until it returns (see :mod:`django_paycharge.services.webhooks.announcements`).
``charge_returned`` alone is not recorded: it hands receivers the customer's
live request, which no later run could have. See docs/signals.md.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.dispatch import Signal

logger = logging.getLogger("django_paycharge.signals")

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


def send(signal: Signal, *, sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """Announce a change: recorded now on ``using``, heard by each receiver after the commit.

    Call it inside the transaction that makes the change, on the alias it
    writes to (outside one, the record commits on its own). Receivers run when
    the outermost transaction on ``using`` commits, never for a change that was
    rolled back. A receiver that raises is logged and run again later, alone
    (the others are not run twice); it changes nothing else: the caller gets
    its answer, the stored data stays. Each receiver gets ``event_id``.
    """
    if not signal.has_listeners(sender):
        return
    if signal is charge_returned:
        _send_live(signal, sender=sender, using=using, **kwargs)
        return
    from .services.webhooks import announcements  # the record lives with the services

    announcements.announce(
        _SIGNAL_NAMES[id(signal)], signal, sender=sender, using=using, kwargs=kwargs
    )


def _send_live(signal: Signal, *, sender: Any, using: str, **kwargs: Any) -> None:
    """Run the receivers once after the commit, robustly; nothing is recorded."""

    def deliver() -> None:
        responses = signal.send_robust(sender=sender, event_id=uuid.uuid4(), **kwargs)
        for receiver, result in responses:
            if isinstance(result, Exception):
                # Django's own log line (django.dispatch) carries the traceback.
                logger.error(
                    "Receiver %s of %s failed (%s); nothing else was affected",
                    _name(receiver),
                    _SIGNAL_NAMES.get(id(signal), "a signal"),
                    type(result).__name__,
                )

    transaction.on_commit(deliver, using=using)


def _name(receiver: Any) -> str:
    module = getattr(receiver, "__module__", None)
    name = getattr(receiver, "__qualname__", None) or repr(receiver)
    return f"{module}.{name}" if module else name


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
}
_SIGNAL_NAMES = {id(signal): name for name, signal in SIGNALS.items()}
