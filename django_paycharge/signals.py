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

The last four are sent after the change commits (``send_robust``: a failing
receiver is logged, never undoes the change). See docs/signals.md.
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
