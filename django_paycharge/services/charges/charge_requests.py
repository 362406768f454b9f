"""The create kind of the exactly-once machine: send a charge request, store its charge.

What every request shares (the classification of answers, asking again with
the key, abandonment, look-up, recovery) is :mod:`..lifecycle.exactly_once`; this module
says only how a create is sent, how its charge is looked for (charges of the
request's token, by reads), and what a caller is told.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, router
from django.db.backends.base.base import BaseDatabaseWrapper

from ... import observe, outbox, signals
from ...client.types import Charge as RemoteCharge
from ...exceptions import (
    APIError,
    ChargeOutcomeUnknownError,
    ChargeRequestAbandonedError,
    PayChargeError,
)
from ...models import OPEN_REQUEST_STATES, Charge, ChargeRequest, RequestState
from ..clients import get_client
from ..lifecycle import mark, request_name, succeed, succeed_statement
from ..mirror import NEW_CHARGE_ID, Link, insert_new_charge, refresh_charge, store_remote_charge
from ..retry import retry_transient
from .payment_types import fill_later

logger = logging.getLogger("django_paycharge.services")


class CreateKind:
    """``POST /charges`` with the request's key; its result is the stored :class:`Charge`."""

    name = "create"
    nothing_done = "not_charged"

    def send(self, request: ChargeRequest) -> Charge:
        if request.charge_gateway_id is not None:
            # The gateway answered and the mirror failed: read that charge, never create.
            charge = refresh_charge(request.charge_gateway_id, account=request.account)
            link_charge(request, charge)
            return charge
        client = get_client(request.account)
        key = str(request.idempotency_key)
        remote = client.charges.create(**request.params, idempotency_key=key)
        return store_created(request, remote)

    def find(self, request: ChargeRequest) -> Charge | None:
        return find_remote_charge(request)

    def done_before(self, exc: APIError) -> bool:
        return False  # a create refused for good made nothing

    def stored(self, request: ChargeRequest) -> Charge | None:
        if request.charge is not None:
            return request.charge
        if request.charge_gateway_id is not None:
            return refresh_charge(request.charge_gateway_id, account=request.account)
        return None

    def refusal(self, request: ChargeRequest, exc: PayChargeError) -> PayChargeError:
        return exc

    def unknown_error(self, request: ChargeRequest, exc: PayChargeError | None) -> PayChargeError:
        request_id = exc.request_id if exc is not None else None
        return ChargeOutcomeUnknownError(
            idempotency_key=request_name(request), request_id=request_id
        )

    def abandoned_error(self, request: ChargeRequest) -> PayChargeError:
        return ChargeRequestAbandonedError()


#: The create kind: what a checkout passes to the exactly-once machine with its request.
CREATE = CreateKind()


def store_created(request: ChargeRequest, remote: RemoteCharge) -> Charge:
    """Store the charge the gateway made for ``request``; link them; send ``charge_created``.

    A new charge is inserted by the mirror with the request's link, in one
    short transaction (:func:`..mirror.insert_new_charge`); one the mirror
    holds already (a webhook or a read came first) goes through the guarded
    upsert. Its payment type is read later, off the caller's path
    (:func:`.payment_types.fill_later`). The write is retried through
    transient database errors (the gateway said yes: a locked SQLite file
    must not turn that into an error page). If it still fails, the charge's
    id is kept on the request and the error raised: the request stays open,
    and ``paycharge_recover`` reads that charge (never creates another).
    """
    try:
        charge = insert_new_charge(remote, account=request.account, link=_link(request, remote))
        if charge is None:
            charge = store_remote_charge(remote, account=request.account)
            link_charge(request, charge)
    except DatabaseError:
        logger.error(
            "Charge %s was created for request %s but could not be stored; "
            "paycharge_recover will store it.",
            remote.id,
            request_name(request),
        )
        states = (*OPEN_REQUEST_STATES, RequestState.ABANDONED)
        mark(request, states, charge_gateway_id=remote.id)
        raise
    if not charge.payment_type:
        fill_later(charge)
    return charge


def _link(request: ChargeRequest, remote: RemoteCharge) -> Link:
    """``request`` marked succeeded with the new charge ``remote``, with the insert."""
    links = {
        "charge": None,  # the inserted row's id
        "charge_gateway_id": remote.id,
        # The answer that created it: logs, rows and traces join on its request id.
        "gateway_request_id": observe.request_id("POST"),
    }

    def write(charge: Charge) -> None:
        if succeed(request, **{**links, "charge": charge}):  # once per request
            alias = router.db_for_write(Charge)
            outbox.send(signals.charge_created, sender=Charge, charge=charge, using=alias)

    def statement(connection: BaseDatabaseWrapper, alias: str) -> tuple[str, list[Any]]:
        expressions = (("charge", NEW_CHARGE_ID),)
        return succeed_statement(request, links, connection, alias, expressions=expressions)

    return Link(write, statement, announces=(signals.charge_created,))


def link_charge(request: ChargeRequest, charge: Charge) -> None:
    """Mark ``request`` succeeded with ``charge``; ``charge_created`` is sent once per request.

    A failing write is logged, not raised: the charge exists and is stored, and
    ``paycharge_recover`` links it later.
    """

    def link() -> None:
        moved = succeed(
            request,
            charge=charge,
            charge_gateway_id=charge.gateway_id,
            # The answer that created it: logs, rows and traces join on its request id.
            gateway_request_id=observe.request_id("POST"),
        )
        if moved:  # once per request, whoever stored it
            outbox.send(signals.charge_created, sender=Charge, charge=charge, using=alias)

    alias = router.db_for_write(ChargeRequest)
    try:
        retry_transient(link, using=alias)
    except DatabaseError:
        logger.exception("Charge request %s not linked to its charge yet", request_name(request))


def find_remote_charge(request: ChargeRequest) -> Charge | None:
    """Look for a charge the gateway made for ``request`` (a read, never a create); store it.

    Charges of the request's transaction token with its amount and currency,
    made since shortly before the request and not already another request's.
    Raises when the charges cannot be read.
    """
    params = request.params
    client = get_client(request.account)
    page = client.charges.list_page(transaction_token_id=params["transaction_token_id"], limit=10)
    since = request.created_at - timedelta(minutes=5)
    ids = [item.id for item in page.items]
    taken = set(
        ChargeRequest.objects.exclude(pk=request.pk)
        .filter(charge__gateway_id__in=ids)
        .values_list("charge__gateway_id", flat=True)
    )
    for remote in page.items:
        if remote.id in taken or not _matches(remote, params, since):
            continue
        logger.warning("Charge request %s: found its charge %s", request_name(request), remote.id)
        return store_created(request, remote)
    return None


def _matches(remote: RemoteCharge, params: dict[str, Any], since: Any) -> bool:
    if remote.requested_amount != params.get("amount"):
        return False
    if (remote.requested_currency or "").upper() != str(params.get("currency", "")).upper():
        return False
    mtid = params.get("merchant_transaction_id")
    if mtid is not None and remote.merchant_transaction_id not in (None, mtid):
        return False
    return remote.created_on is None or remote.created_on >= since
