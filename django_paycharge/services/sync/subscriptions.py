"""The bulk sync of subscriptions: every subscription of an account read and mirrored.

The simplest correct loop on the client's paging (``follow_list``, ``has_more``), not
the charge sync's windows: a store has far fewer subscriptions than charges, and their
list cannot be cut by creation time. The conventions are the charge sync's: one run
of an account at a time (its own lock, beside the charge sync's), the tolerant reader
(an item that cannot be read is quarantined, never lost), and writes through the
mirror's one writer, which announces what changed (a repeated run announces nothing).
A subscription whose ``updated_on`` moved since the mirror last held it has its
newest charges read too (one page): a renewal whose webhook was lost is mirrored,
and announced, by the next sync.
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
from .lock import account_lock
from .run import _in_progress

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
            raise _in_progress(name)
        rejected: list[Rejected] = []
        for remote in client.subscriptions.list(store, rejected=rejected):
            result.seen += 1
            if _changed(remote):
                result.changed += 1
                row = store_subscription(remote, account=name)
                result.charges += _store_recent_charges(row)
            else:
                store_subscription(remote, account=name)
        if rejected:
            kind = QuarantinedItem.Resource.SUBSCRIPTION
            result.quarantined = quarantine(name, rejected, resource=kind, source="sync")
    return result


def _changed(remote: RemoteSubscription) -> bool:
    """Whether the gateway's subscription is new to the mirror or newer than its row."""
    held = Subscription.objects.filter(gateway_id=remote.id).values_list("updated_on").first()
    return held is None or remote.updated_on is None or held[0] != remote.updated_on


def _store_recent_charges(row: Subscription) -> int:
    """Mirror the subscription's newest charges (one page); how many were read."""
    store = row.store_id or conf.get_account(row.account).store_id
    if store is None:
        return 0
    client = get_client(row.account)
    rejected: list[Rejected] = []
    listed = client.subscriptions.charges(
        store, row.gateway_id, limit=RECENT_CHARGES, rejected=rejected
    )
    newest = list(itertools.islice(listed, RECENT_CHARGES))
    for remote in reversed(newest):  # the oldest first: renewals announced in their order
        store_remote_charge(remote, account=row.account)
    if rejected:
        quarantine(row.account, rejected, source="sync")
    return len(newest)
