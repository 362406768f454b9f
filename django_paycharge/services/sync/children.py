"""Keep refunds and cancels in step with the gateway: from webhooks and from the sync.

A ``refund_finished`` or ``cancel_finished`` delivery is never trusted: the
refund (or cancel) it names is read again from the gateway and stored. The
sync lists each charge's refunds and cancels (two requests per charge: the
gateway has no store-wide list of them), so it is asked for explicitly.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext

from ... import conf
from ...client import Rejected, ShapeError
from ...client.lifecycle_parsing import parse_cancel, parse_refund
from ...client.lifecycle_types import Cancel as RemoteCancel
from ...client.lifecycle_types import Refund as RemoteRefund
from ...client.vocabulary import CANCEL_EVENT, REFUND_EVENT
from ...exceptions import NotFoundError, PayChargeError, ServiceError
from ...models import Charge, QuarantinedItem
from ..clients import get_client
from ..mirror import (
    quarantine,
    refresh_charge,
    report,
    retry_quarantined,
    store_cancel,
    store_of,
    store_refund,
)

logger = logging.getLogger("django_paycharge.services")

#: Webhook events handled here (``services.webhooks.deliveries`` dispatches them).
LIFECYCLE_EVENTS = frozenset({REFUND_EVENT, CANCEL_EVENT})
#: Quarantined list items of these kinds are tried again by every refunds sync.
QUARANTINED = (QuarantinedItem.Resource.REFUND, QuarantinedItem.Resource.CANCEL)
#: Charges that can have refunds or cancels worth syncing.
SYNCED_STATUSES = ("successful", "canceled", "authorized")


class UnusableEvent(ServiceError):
    """A refund or cancel delivery that names no refund or cancel we can read."""


def _uuid(value: Any, field: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        message = gettext("The field %(field)s in 'data' is not a UUID.") % {"field": field}
        raise UnusableEvent(message) from None


def apply_lifecycle_event(account: str, event: str, data: Any) -> Charge:
    """Re-read the refund or cancel a delivery names, store it; returns its charge."""
    if not isinstance(data, dict):
        raise UnusableEvent(gettext("A refund or cancel event without its resource in 'data'."))
    item_id = _uuid(data.get("id"), "id")
    charge_id = _uuid(data.get("charge_id"), "charge_id")
    store_id = _uuid(data["store_id"], "store_id") if data.get("store_id") else None
    charge = Charge.objects.filter(gateway_id=charge_id).first()
    try:
        if charge is None or event == CANCEL_EVENT:
            # A cancel also changed the charge; an unknown charge is mirrored first.
            charge = refresh_charge(charge_id, store_id, account=account)
        client = get_client(charge.account)
        store = store_of(charge)
        if event == REFUND_EVENT:
            store_refund(client.refunds.retrieve(store, charge_id, item_id), charge=charge)
        else:
            store_cancel(client.cancels.retrieve(store, charge_id, item_id), charge=charge)
    except NotFoundError:
        raise UnusableEvent(
            gettext("The gateway does not know the refund or cancel this delivery names.")
        ) from None
    return charge


def sync_charge_children(charge: Charge) -> tuple[int, int]:
    """Read every refund and cancel of one charge and store them; ``(refunds, cancels)``.

    A listed item without a usable ``id`` is quarantined, as a charge would be.
    """
    client = get_client(charge.account)
    store = store_of(charge)
    refunds = cancels = 0
    rejected: list[Rejected] = []
    for refund in client.refunds.list(store, charge.gateway_id, limit=100, rejected=rejected):
        store_refund(refund, charge=charge)
        refunds += 1
    quarantine(charge.account, rejected, resource=QuarantinedItem.Resource.REFUND)
    rejected = []
    for cancel in client.cancels.list(store, charge.gateway_id, limit=100, rejected=rejected):
        store_cancel(cancel, charge=charge)
        cancels += 1
    quarantine(charge.account, rejected, resource=QuarantinedItem.Resource.CANCEL)
    return refunds, cancels


def sync_refunds(
    account: str | None = None,
    store: uuid.UUID | str | None = None,
    *,
    since: datetime | None = None,
    charges: Iterable[Charge] | None = None,
) -> dict[str, int]:
    """Sync the refunds and cancels of the mirror's charges that can have them.

    By default every ``successful``, ``canceled`` or ``authorized`` charge of
    the account (and store, and created at or after ``since``). A charge whose
    lists cannot be read is counted in ``failed`` and the others go on.
    ``quarantined`` counts the refund and cancel items still quarantined after
    the run (tried again first); ``quarantined_new`` those never reported
    yet, ``quarantined_retriable`` those the next run tries again.
    """
    name = account or conf.DEFAULT_ACCOUNT
    retry_quarantined(
        name, resource=QuarantinedItem.Resource.REFUND, parse=_refund, store=_store_refund
    )
    retry_quarantined(
        name, resource=QuarantinedItem.Resource.CANCEL, parse=_cancel, store=_store_cancel
    )
    if charges is None:
        charges = _candidates(name, store, since)
    counts = {"charges": 0, "refunds": 0, "cancels": 0, "failed": 0}
    for charge in charges:
        try:
            refunds, cancels = sync_charge_children(charge)
        except PayChargeError as exc:
            counts["failed"] += 1
            logger.warning("Refunds of charge %s not synced: %s", charge.gateway_id, exc)
            continue
        counts["charges"] += 1
        counts["refunds"] += refunds
        counts["cancels"] += cancels
    kept = report(name, *QUARANTINED)
    counts.update(
        quarantined=kept.kept, quarantined_new=kept.new, quarantined_retriable=kept.retriable
    )
    return counts


# A quarantined refund or cancel is stored under its charge, which the payload must name.
def _charge_of(remote: RemoteRefund | RemoteCancel) -> Charge:
    charge = None
    if remote.charge_id is not None:
        charge = Charge.objects.filter(gateway_id=remote.charge_id).first()
    if charge is None:
        raise ShapeError("its charge_id names no charge of the mirror")
    return charge


def _refund(payload: Any) -> RemoteRefund:
    remote = parse_refund(payload)
    _charge_of(remote)
    return remote


def _cancel(payload: Any) -> RemoteCancel:
    remote = parse_cancel(payload)
    _charge_of(remote)
    return remote


def _store_refund(remote: RemoteRefund) -> object:
    return store_refund(remote, charge=_charge_of(remote))


def _store_cancel(remote: RemoteCancel) -> object:
    return store_cancel(remote, charge=_charge_of(remote))


def _candidates(account: str, store: Any, since: datetime | None) -> Iterable[Charge]:
    query: QuerySet[Charge] = Charge.objects.filter(account=account, status__in=SYNCED_STATUSES)
    if store is not None:
        query = query.filter(store_id=uuid.UUID(str(store)))
    if since is not None:
        query = query.filter(created_on__gte=since)
    return query.order_by("-created_on", "-id").iterator(chunk_size=500)
