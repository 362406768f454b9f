"""Signals the app sends. Receivers get ``sender`` (the model class) and keyword arguments.

- ``charge_created(charge)``: a charge was created through :func:`services.create_charge`.
- ``charge_updated(charge, previous_status)``: the mirror of a charge changed.
- ``charge_status_changed(charge, previous_status, status)``: once per real change of status.
- ``charge_returned(charge, request)``: the customer came back from the provider.
- ``issuer_token_fetched(charge, issuer_token)``: an issuer token was fetched and stored.
- ``webhook_received(delivery)``: a genuine webhook delivery was stored.

The app sends every one of them through :func:`send`, and only through it.
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
}
_SIGNAL_NAMES = {id(signal): name for name, signal in SIGNALS.items()}
