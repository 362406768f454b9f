"""Store subscriptions and their scheduled payments read from the gateway; read them again.

The same guarded upsert as refunds and cancels (:func:`.lifecycle_store._upsert`): the
row is locked or inserted, and a read only replaces it when it is not older: a lower
status rank never replaces a higher one (``canceled`` and ``completed`` are final), and
within the running statuses, which move to and fro (current, suspended, unpaid), the
gateway's ``updated_on`` decides, so a late webhook never undoes a newer change. The
same fitting too: a value that does not fit its column is stored as unknown, ``raw``
keeps it. Items of a list that cannot be read go to the quarantine. A status that
moved is announced here, in the write's transaction (:func:`.announced.announce_subscription`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.db import router, transaction
from django.utils import timezone
from django.utils.translation import gettext

from ... import conf
from ...client.subscription_types import ScheduledPayment as RemotePayment
from ...client.subscription_types import Subscription as RemoteSubscription
from ...client.subscription_vocabulary import SUBSCRIPTION_FIELDS, subscription_status_rank
from ...client.types import Rejected
from ...exceptions import PayChargeError
from ...models import Charge, QuarantinedItem, ScheduledPayment, Subscription
from ...models.fit import fit_row, without_nul
from ..clients import get_client
from ..retry import retry_transient
from .announced import announce_subscription
from .lifecycle_store import _upsert
from .quarantined import quarantine
from .reads import store_remote_charge


def _raw(value: Any) -> Any:
    return value.raw if value is not None else None


def _subscription_values(remote: RemoteSubscription, account: str) -> dict[str, Any]:
    upcoming = remote.next_payment
    values: dict[str, Any] = {
        "account": account,
        **{name: getattr(remote, name) for name in _COPIED},
        "status_rank": subscription_status_rank(remote.status),
        **{name: _raw(getattr(remote, name)) for name in _NESTED},
        "next_payment_date": upcoming.due_date if upcoming is not None else None,
        "raw": remote.raw,
        "synced_at": timezone.now(),
    }
    return fit_row(Subscription, without_nul(values))


#: Nested objects kept as their JSON; every other field is copied as read.
_NESTED = ("installment_plan", "subscription_plan", "schedule_settings", "three_ds")
_COPIED = tuple(name for name in SUBSCRIPTION_FIELDS if name not in _NESTED)
_PAYMENT_COPIED = (
    "due_date",
    "zone_id",
    "amount",
    "amount_formatted",
    "currency",
    "is_paid",
    "is_last_payment",
    "successful_payment_date",
    "terminate_with_status",
    "retry_date",
    "created_on",
    "updated_on",
)


def _payment_values(remote: RemotePayment, subscription: Subscription) -> dict[str, Any]:
    values: dict[str, Any] = {
        "subscription": subscription,
        "account": subscription.account,
        **{name: getattr(remote, name) for name in _PAYMENT_COPIED},
        "status_rank": 1 if remote.is_paid else 0,
        "raw": remote.raw,
        "synced_at": timezone.now(),
    }
    return fit_row(ScheduledPayment, without_nul(values))


def store_scheduled_payment(remote: RemotePayment, *, subscription: Subscription) -> Any:
    """Insert or move forward one scheduled payment (a paid one never becomes unpaid)."""
    values = _payment_values(remote, subscription)
    with transaction.atomic(using=router.db_for_write(ScheduledPayment)):
        row, _before = _upsert(ScheduledPayment, remote.id, values, by_updated_on=True)
    return row


def store_subscription(remote: RemoteSubscription, *, account: str) -> Subscription:
    """Insert or move forward the mirror of one subscription, and of its next payment.

    Run again through transient database errors, as charges are.
    """
    alias = router.db_for_write(Subscription)

    def write() -> Subscription:
        with transaction.atomic(using=alias):
            values = _subscription_values(remote, account)
            row, before = _upsert(Subscription, remote.id, values, by_updated_on=True)
            announce_subscription(row, getattr(before, "status", None), alias)
            if remote.next_payment is not None:
                store_scheduled_payment(remote.next_payment, subscription=row)
        result: Subscription = row
        return result

    return retry_transient(write, using=alias)


def store_scheduled_payments(
    subscription: Subscription, payments: Iterable[RemotePayment], rejected: list[Rejected]
) -> list[ScheduledPayment]:
    """Store a subscription's listed payments; the unreadable ones (``rejected``) are
    quarantined, never lost."""
    stored = [store_scheduled_payment(p, subscription=subscription) for p in payments]
    if rejected:
        kind = QuarantinedItem.Resource.SCHEDULED_PAYMENT
        quarantine(subscription.account, rejected, resource=kind, source="subscription")
    return stored


def subscription_place(
    subscription_id: uuid.UUID | str, store_id: uuid.UUID | str | None, account: str | None
) -> tuple[str, uuid.UUID, Any]:
    """``(account, id, store)`` of a subscription: the arguments, else its row, else settings."""
    sub_uuid = uuid.UUID(str(subscription_id))
    local = Subscription.objects.filter(gateway_id=sub_uuid).only("account", "store_id").first()
    name = account or (local.account if local else conf.DEFAULT_ACCOUNT)
    store = store_id or (local.store_id if local else None) or conf.get_account(name).store_id
    if store is None:
        raise PayChargeError(
            gettext(
                "The subscription's store is unknown: pass store_id, or set PAYCHARGE['STORE_ID']."
            )
        )
    return name, sub_uuid, store


def refresh_subscription(
    subscription_id: uuid.UUID | str,
    store_id: uuid.UUID | str | None = None,
    *,
    account: str | None = None,
) -> Subscription:
    """Read one subscription from the gateway and update (or create) its mirror row."""
    name, sub_uuid, store = subscription_place(subscription_id, store_id, account)
    remote = get_client(name).subscriptions.retrieve(store, sub_uuid)
    return store_subscription(remote, account=name)


def refresh_latest_charge(subscription: Subscription) -> Charge | None:
    """Read the subscription's newest charge (a renewal's, after its payment event) and
    mirror it; None when it has none yet. One request: the first page only."""
    name, sub_id, store = subscription_place(
        subscription.gateway_id, subscription.store_id, subscription.account
    )
    latest = next(iter(get_client(name).subscriptions.charges(store, sub_id, limit=10)), None)
    return store_remote_charge(latest, account=name) if latest is not None else None
