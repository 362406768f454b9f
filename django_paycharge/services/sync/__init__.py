"""The bulk sync: one per account, windows read side by side, pages written through the mirror.

Also the refunds and cancels of charges (from the sync and from webhooks), and the
subscriptions (:mod:`.subscriptions`: a simple loop on the client's paging).
Other flows import only the names below.
"""

from __future__ import annotations

from .children import LIFECYCLE_EVENTS, apply_lifecycle_event, sync_charge_children, sync_refunds
from .read import Progress, SyncResult
from .run import sync_charges, sync_charges_task
from .subscriptions import SubscriptionSyncResult, sync_subscriptions

__all__ = [
    "LIFECYCLE_EVENTS",
    "Progress",
    "SubscriptionSyncResult",
    "SyncResult",
    "apply_lifecycle_event",
    "sync_charge_children",
    "sync_charges",
    "sync_charges_task",
    "sync_refunds",
    "sync_subscriptions",
]
