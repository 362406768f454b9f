"""A charge the gateway has just created, stored with one insert and announced as the upsert does.

A new charge is new to the mirror, except when a webhook or a read got there
first. So it is stored with one insert that does nothing when the row exists
(:mod:`.inserts`), and announced by :mod:`.announced`, as a page of the sync
announces a charge it inserts. When the row was there already nothing is
written: the caller stores the charge through the guarded upsert instead,
which never moves a status backwards.

The flow that asked for the charge writes its own row with it (a checkout
marks its request answered): a :class:`Link`, run in the same transaction.
When nobody listens to what would be announced, PostgreSQL takes the insert and
the link as one statement (the link's UPDATE reads the inserted id from the
INSERT's ``RETURNING``): one round trip in autocommit, no BEGIN and COMMIT on
the path the customer waits on.
"""

from __future__ import annotations

from django.db import OperationalError, connections, router
from django.utils import timezone

from ...client.types import Charge as RemoteCharge
from ...models import Charge
from ..retry import is_transient, retry_transient
from .announced import announce_charges, charges_heard
from .inserts import Link, as_stored, insert_and_link, insert_once, new_id
from .rows import EncodedJSON, charge_row

#: The unique constraint that says the charge is stored already.
_STORED = ("gateway_id",)
#: The SQL of the inserted charge's id, for a link written in the same statement.
NEW_CHARGE_ID = new_id(Charge)


def insert_new_charge(
    remote: RemoteCharge, *, account: str, link: Link | None = None
) -> Charge | None:
    """Store ``remote`` as a new row (and ``link``); None, and nothing written, if it exists.

    The payment type is left empty: the checkout reads it later. Retried through
    transient database errors; other database errors are raised.
    """
    alias = router.db_for_write(Charge)
    values = charge_row(remote, account, "", timezone.now())
    if type(values["raw"]) is EncodedJSON:  # written by the field, as the model says
        values["raw"] = remote.raw
    connection = connections[alias]
    if link is not None and connection.vendor == "postgresql" and not _heard(link):
        try:
            pk = insert_and_link(Charge, values, link, connection, alias, conflict=_STORED)
            if pk is None:
                return None
            inserted: Charge = as_stored(Charge, pk, values, alias)
            return inserted
        except OperationalError as exc:
            if not is_transient(exc):
                raise
            # A lost race: the transaction below runs it again, retried.

    def write() -> Charge | None:
        pk = insert_once(Charge, values, conflict=_STORED, using=alias)
        if pk is None:
            return None
        charge: Charge = as_stored(Charge, pk, values, alias)
        announce_charges([(charge, None)], alias)
        if link is not None:
            link.write(charge)
        return charge

    return retry_transient(write, using=alias)


def _heard(link: Link) -> bool:
    """Whether a receiver listens to what storing the new charge and its link announce."""
    return charges_heard() or any(signal.has_listeners(Charge) for signal in link.announces)
