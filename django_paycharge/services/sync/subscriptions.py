"""The bulk sync of subscriptions: every subscription of an account read and mirrored.

The simplest correct loop on the client's paging (``follow_list``, ``has_more``), not
the charge sync's windows: a store has far fewer subscriptions than charges, and their
list cannot be cut by creation time. The conventions are the charge sync's: one run
of an account at a time (its own lock, beside the charge sync's), the tolerant reader
(an item that cannot be read is quarantined, never lost), and writes through the
mirror's one writer, which announces what changed (a repeated run announces nothing).
A subscription whose ``updated_on`` moved since the mirror last held it has its
newest charges read too (one page), before the subscription is stored: a renewal
whose webhook was lost is mirrored, and announced, by the next sync, even when a run
was cut short between the two. (Such a renewal's ``subscription`` argument is the
row as it was, or None for a subscription new to the mirror.)
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass

from ... import conf
from ...client.subscription_types import Subscription as RemoteSubscription
from ...client.types import Rejected
from ...models import QuarantinedItem, Subscription
from ..clients import get_client
from ..mirror import quarantine, store_remote_charge, store_subscription
from .lock import account_lock, in_progress

#: How many of a changed subscription's newest charges are read (one page).
RECENT_CHARGES = 10


@dataclass
class SubscriptionSyncResult:
    """What a run did: subscriptions read, of them changed, charges read, quarantined."""

    seen: int = 0
    changed: int = 0
    charges: int = 0
    quarantined: int = 0


def sync_subscriptions(
    account: str | None = None,
    store_id: uuid.UUID | str | None = None,
    *,
    wait: float = 0.0,
) -> SubscriptionSyncResult:
    """Bring the mirror of one account's (or one store's) subscriptions up to date.

    ``wait``: seconds to wait for another subscription sync of the account before
    raising :class:`SyncInProgressError`.
    """
    name = account or conf.DEFAULT_ACCOUNT
    client = get_client(name)
    store = uuid.UUID(str(store_id)) if store_id else conf.get_account(name).store_id
    result = SubscriptionSyncResult()
    with account_lock(f"{name}.subscriptions", wait=wait) as held:
        if not held:
            raise in_progress(name)
        rejected: list[Rejected] = []
        for remote in client.subscriptions.list(store, rejected=rejected):
            result.seen += 1
            if _changed(remote):
                result.changed += 1
                # Its charges first: the row's updated_on moves once they are mirrored, so
                # a run cut short between the two reads them again next time.
                result.charges += _store_recent_charges(name, remote.store_id or store, remote)
            store_subscription(remote, account=name)
        if rejected:
            kind = QuarantinedItem.Resource.SUBSCRIPTION
            result.quarantined = quarantine(name, rejected, resource=kind, source="sync")
    return result


def _changed(remote: RemoteSubscription) -> bool:
    """Whether the gateway's subscription is new to the mirror or newer than its row."""
    held = Subscription.objects.filter(gateway_id=remote.id).values_list("updated_on").first()
    return held is None or remote.updated_on is None or held[0] != remote.updated_on


def _store_recent_charges(account: str, store: uuid.UUID | None, sub: RemoteSubscription) -> int:
    """Mirror the subscription's newest charges (one page); how many were read."""
    if store is None:
        return 0
    rejected: list[Rejected] = []
    listed = get_client(account).subscriptions.charges(
        store, sub.id, limit=RECENT_CHARGES, rejected=rejected
    )
    newest = list(itertools.islice(listed, RECENT_CHARGES))
    for remote in reversed(newest):  # the oldest first: renewals announced in their order
        store_remote_charge(remote, account=account)
    if rejected:
        quarantine(account, rejected, source="sync")
    return len(newest)
