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

The app sends every one of them through :func:`send`, and only through it: after the
change commits, robustly (a failing receiver is logged, never undoes the change).
See docs/signals.md.
"""

from __future__ import annotations

import logging
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
    """Send ``signal`` after the outermost transaction on ``using`` commits (at once outside one).

    ``using`` is the alias the sender wrote to: receivers run when that write is
    visible to them, and never for a write that was rolled back. Sent robustly: a
    receiver that raises is logged with its name and traceback, and changes
    nothing else (the other receivers run, the caller gets its answer, the
    stored data stays), so a broken receiver never turns a charge that exists
    into an error page.
    """
    if not signal.has_listeners(sender):
        return

    def deliver() -> None:
        for receiver, result in signal.send_robust(sender=sender, **kwargs):
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
