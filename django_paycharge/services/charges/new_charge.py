"""The charge a create just made, stored and linked to its request in one short write.

A charge the gateway has just created is new to the mirror, except when a
webhook or a read got there first. So the create's path stores it with one
insert that does nothing when the row exists (:mod:`..mirror.inserts`), and
marks its request succeeded with the same write, announcing the new
charge as a page of the sync would (``charge_updated``,
``charge_status_changed``) and ``charge_created`` once per request. When the
row was there already, nothing was written: the caller stores the charge
through the guarded upsert instead, which never moves a status backwards.

The write is one transaction when the announcements have receivers (they are
recorded with the change). When nobody listens, PostgreSQL takes the insert
and the link as one statement (the link's UPDATE reads the inserted id from
the INSERT's ``RETURNING``): one round trip in autocommit, no BEGIN and
COMMIT on the path the customer waits on.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from django.db import OperationalError, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from ... import observe, outbox, signals
from ...client.types import Charge as RemoteCharge
from ...models import Charge, ChargeRequest
from ..lifecycle import succeed, succeed_statement
from ..mirror import (
    EncodedJSON,
    as_stored,
    bound_cursor,
    charge_row,
    insert_once,
    insert_statement,
)
from ..retry import is_transient, retry_transient

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
    links = {
        "charge": None,  # the inserted row's id
        "charge_gateway_id": values["gateway_id"],
        # The answer that created it: logs, rows and traces join on its request id.
        "gateway_request_id": observe.request_id("POST"),
    }
    connection = connections[alias]
    if connection.vendor == "postgresql" and not _heard(values["status"]):
        try:
            return _insert_and_link(request, values, links, connection, alias)
        except OperationalError as exc:
            if not is_transient(exc):
                raise
            # A lost race: the transaction below runs it again, retried.

    def write() -> Charge | None:
        pk = insert_once(Charge, values, conflict=_STORED, using=alias)
        if pk is None:
            return None
        charge: Charge = as_stored(Charge, pk, values, alias)
        _announce_new(charge, alias)
        if succeed(request, **{**links, "charge": charge}):  # once per request
            outbox.send(signals.charge_created, sender=Charge, charge=charge, using=alias)
        return charge

    return retry_transient(write, using=alias)


def _heard(status: str | None) -> bool:
    """Whether a receiver listens to what storing a new charge announces."""
    heard = [signals.charge_updated, signals.charge_created]
    if status is not None:
        heard.append(signals.charge_status_changed)
    return any(signal.has_listeners(Charge) for signal in heard)


def _insert_and_link(
    request: ChargeRequest,
    values: dict[str, Any],
    links: dict[str, Any],
    connection: BaseDatabaseWrapper,
    alias: str,
) -> Charge | None:
    """PostgreSQL: the insert and the link in one statement (nothing to announce)."""
    insert, params = insert_statement(Charge, values, connection, conflict=_STORED, alias=alias)
    link, link_params = succeed_statement(
        request, links, connection, alias, expressions=_FROM_INSERT
    )
    sql = (
        f"WITH new AS ({insert}), "  # noqa: S608 - statements built from model names
        f"linked AS ({link} AND EXISTS (SELECT 1 FROM new) RETURNING 1) "
        f"SELECT (SELECT {_PK} FROM new)"
    )
    # Inside a transaction of the caller's, a savepoint keeps a failure from spoiling it.
    guard = transaction.atomic(using=alias) if connection.in_atomic_block else nullcontext()
    with guard, bound_cursor(connection) as cursor:
        cursor.execute(sql, [*params, *link_params])
        (pk,) = cursor.fetchone()
    if pk is None:
        return None
    charge: Charge = as_stored(Charge, pk, values, alias)
    return charge


_PK = Charge._meta.pk.column
#: The link to the charge is the id the statement's INSERT returned.
_FROM_INSERT = (("charge", f"(SELECT {_PK} FROM new)"),)  # noqa: S608 - a column name


def _announce_new(charge: Charge, alias: str) -> None:
    """What the sync announces for a charge it inserts (previous status: none)."""
    changes: dict[str, Any] = {"charge": charge, "previous_status": None}
    outbox.send(signals.charge_updated, sender=Charge, using=alias, **changes)
    if charge.status is not None:
        outbox.send(
            signals.charge_status_changed,
            sender=Charge,
            using=alias,
            status=charge.status,
            **changes,
        )
