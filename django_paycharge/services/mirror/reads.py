"""Store, refresh and wait for charges read from the gateway (creating them: :mod:`..charges`)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from django.db import router
from django.utils.translation import gettext

from ... import conf
from ...client import PayChargeClient
from ...client.backoff import Backoff
from ...client.types import Charge as RemoteCharge
from ...exceptions import NetworkError, PayChargeError, RateLimitError, ServerError, ServiceError
from ...models import Charge
from ..clients import get_client
from ..retry import retry_transient
from .upsert import upsert_charges

logger = logging.getLogger("django_paycharge.services")


def store_of(charge: Charge) -> uuid.UUID:
    """The charge's store (the account's default when the gateway did not say)."""
    store = charge.store_id or conf.get_account(charge.account).store_id
    if store is None:
        raise ServiceError(
            gettext("The charge's store is unknown: set PAYCHARGE['STORE_ID'] for its account.")
        )
    return uuid.UUID(str(store))


def transaction_token_payment_type(client: PayChargeClient, remote: RemoteCharge) -> str:
    """The payment type of a charge's transaction token, or "" when it cannot be read now.

    The charge does not carry it; a failure here never fails the caller: the
    background fill picks the charge up later.
    """
    if remote.store_id is None or remote.transaction_token_id is None:
        return ""
    try:
        token = client.tokens.retrieve(remote.store_id, remote.transaction_token_id)
    except PayChargeError as exc:
        logger.info("Payment type of charge %s not read yet: %s", remote.id, type(exc).__name__)
        return ""
    return token.payment_type or ""


def store_remote_charge(
    remote: RemoteCharge,
    *,
    account: str,
    payment_type: str = "",
    then: Callable[[Charge], object] | None = None,
) -> Charge:
    """Upsert one charge read from the gateway (guarded: never regresses a status).

    Run again through transient database errors (SQLite busy, deadlocks): what
    the gateway said must not be lost to a moment of contention. Written to, and
    read back from, the database the routers choose for writing charges.
    ``then(charge)`` runs in the same transaction, after the write: a request
    marked done with the charge it changed, both committed or neither.
    """
    alias = router.db_for_write(Charge)

    def write() -> Charge:
        result = upsert_charges(
            [remote],
            account=account,
            payment_types={remote.id: payment_type},
            load=True,
            using=alias,
            savepoint=False,  # retry_transient's transaction is started again whole
        )
        charge = result.charges[remote.id]
        if then is not None:
            then(charge)
        return charge

    return retry_transient(write, using=alias)


def refresh_charge(
    charge_id: uuid.UUID | str,
    store_id: uuid.UUID | str | None = None,
    *,
    account: str | None = None,
    polling: bool = False,
    deadline: float | None = None,
    payment_type: bool = True,
) -> Charge:
    """Read one charge from the gateway and update (or create) its mirror row.

    A payment type the mirror lacks is read from the charge's transaction token
    too, unless ``payment_type`` is False (a caller that only needs the status)
    or ``deadline`` (a :func:`time.monotonic` value) bounds the read: it is
    then left to the background fill, and the call makes one request only.
    """
    charge_uuid = uuid.UUID(str(charge_id))
    read_type = payment_type and deadline is None
    local = None
    if read_type or account is None or store_id is None:
        local = (
            Charge.objects.filter(gateway_id=charge_uuid)
            .only("account", "store_id", "payment_type")
            .first()
        )
    name = account or (local.account if local else conf.DEFAULT_ACCOUNT)
    store = store_id or (local.store_id if local else None) or conf.get_account(name).store_id
    if store is None:
        raise PayChargeError(
            gettext("The charge's store is unknown: pass store_id, or set PAYCHARGE['STORE_ID'].")
        )
    client = get_client(name)
    remote = client.charges.retrieve(store, charge_uuid, polling=polling, deadline=deadline)
    known = ""
    # Known payment types are kept by the upsert: only a charge without one costs a token read.
    if read_type and (local is None or not local.payment_type):
        known = transaction_token_payment_type(client, remote)
    return store_remote_charge(remote, account=name, payment_type=known)


#: Pause after a polling answer that came back still ``pending`` without being held
#: (a gateway or proxy that ignores ``polling=true``), doubled each time up to the cap;
#: not jittered: one customer waits, and the pauses bound how often the gateway is read.
WAIT_BACKOFF = Backoff(0.1, 2.0, jitter="none")
#: A polling answer back sooner than this was not held.
_HELD = 0.5


def wait_for_charge(
    charge: Charge, *, timeout: float = 30.0, sleep: Callable[[float], object] = time.sleep
) -> Charge:
    """Wait (within ``timeout`` seconds) for a ``pending`` charge to move on; return the freshest.

    Uses the gateway's ``polling=true`` reads, which hold the answer until the
    status changes or the gateway's own limit passes. Every read's time-out is
    the time left, so the call returns within ``timeout`` plus one connect
    time-out at most, with what is known. An answer that did not hold, or a
    read that failed on the way (network, 5xx, 429), is followed by a growing
    pause, never a busy loop, and never raised: the charge exists whatever a
    read says, and a caller told of an error might tell its customer that
    nothing was charged.
    """
    deadline = time.monotonic() + timeout
    current = charge
    pauses = 0
    polling = False  # the first read is a plain one: the charge may have moved on already
    while current.status == "pending" or not polling:
        if time.monotonic() >= deadline:
            break
        asked = time.monotonic()
        try:
            current = refresh_charge(
                charge.gateway_id,
                charge.store_id,
                account=charge.account,
                polling=polling,
                deadline=deadline,
            )
        except (NetworkError, RateLimitError, ServerError) as exc:
            logger.info(
                "Waiting for charge %s: a read failed (%s)", charge.gateway_id, type(exc).__name__
            )
            failed = True
        else:
            failed = False
            if current.status != "pending":
                break
        if (polling or failed) and time.monotonic() - asked < _HELD:
            sleep(max(0.0, min(WAIT_BACKOFF.delay(pauses), deadline - time.monotonic())))
            pauses += 1
        polling = True
    return current
