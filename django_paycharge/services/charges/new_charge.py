"""The charge a create just made, stored and linked to its request in one short transaction.

A charge the gateway has just created is new to the mirror, except when a
webhook or a read got there first. So the create's path stores it with one
insert that does nothing when the row exists (:mod:`..mirror.inserts`), and
marks its request succeeded in the same transaction, announcing the new
charge as a page of the sync would (``charge_updated``,
``charge_status_changed``) and ``charge_created`` once per request. When the
row was there already, nothing was written: the caller stores the charge
through the guarded upsert instead, which never moves a status backwards.
"""

from __future__ import annotations

from typing import Any

from django.db import router
from django.utils import timezone

from ... import observe, signals
from ...client.types import Charge as RemoteCharge
from ...models import Charge, ChargeRequest
from ..lifecycle import succeed
from ..mirror import EncodedJSON, as_stored, charge_row, insert_once
from ..retry import retry_transient

#: The unique constraint that says the charge is stored already.
_STORED = ("gateway_id",)


def store_new_charge(request: ChargeRequest, remote: RemoteCharge) -> Charge | None:
    """Store ``remote`` as a new row and link ``request`` to it; None if the row exists.

    The payment type is left empty: it is read later (see :mod:`.payment_types`).
    Retried through transient database errors; other database errors are raised.
    """
    alias = router.db_for_write(Charge)
    values = charge_row(remote, request.account, "", timezone.now())
    if type(values["raw"]) is EncodedJSON:  # written by the field, as the model says
        values["raw"] = remote.raw
    # The answer that created it: logs, rows and traces join on its request id.
    gateway_request_id = observe.request_id("POST")

    def write() -> Charge | None:
        pk = insert_once(Charge, values, conflict=_STORED, using=alias)
        if pk is None:
            return None
        charge: Charge = as_stored(Charge, pk, values, alias)
        _announce_new(charge, alias)
        linked = succeed(
            request,
            charge=charge,
            charge_gateway_id=charge.gateway_id,
            gateway_request_id=gateway_request_id,
        )
        if linked:  # once per request, whoever stored it
            signals.send(signals.charge_created, sender=Charge, charge=charge, using=alias)
        return charge

    return retry_transient(write, using=alias)


def _announce_new(charge: Charge, alias: str) -> None:
    """What the sync announces for a charge it inserts (previous status: none)."""
    changes: dict[str, Any] = {"charge": charge, "previous_status": None}
    signals.send(signals.charge_updated, sender=Charge, using=alias, **changes)
    if charge.status is not None:
        signals.send(
            signals.charge_status_changed,
            sender=Charge,
            using=alias,
            status=charge.status,
            **changes,
        )
