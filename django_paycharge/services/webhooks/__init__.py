"""Deliveries: webhook deliveries received, sent on and processed; webhook configurations.

Processing is at least once under a lease (:mod:`django_paycharge.outbox`); the
flow defines and sends its own tasks (:mod:`.drain`). Other flows and entry
points import only the names below.
"""

from __future__ import annotations

from .configs import (
    configured_tokens,
    delivery_token_matches,
    matches_auth_token,
    sync_webhooks,
)
from .deliveries import (
    BUSY,
    MAX_ATTEMPTS,
    MISSING,
    current_status,
    pending_deliveries,
    process_claimed,
    process_delivery,
    prune_deliveries,
    store_delivery,
)
from .dispatch import dispatch_delivery, handoff
from .drain import (
    DELIVERY_RETRY_BACKOFF,
    DRAIN_BATCH,
    DRAIN_POLL,
    DRAIN_WINDOW,
    drain_webhook_deliveries,
    drains_deliveries,
    process_webhook_delivery,
    sweep_webhook_leases,
    wake_drain,
)

__all__ = [
    "BUSY",
    "DELIVERY_RETRY_BACKOFF",
    "DRAIN_BATCH",
    "DRAIN_POLL",
    "DRAIN_WINDOW",
    "MAX_ATTEMPTS",
    "MISSING",
    "configured_tokens",
    "current_status",
    "delivery_token_matches",
    "dispatch_delivery",
    "drain_webhook_deliveries",
    "drains_deliveries",
    "handoff",
    "matches_auth_token",
    "pending_deliveries",
    "process_claimed",
    "process_delivery",
    "process_webhook_delivery",
    "prune_deliveries",
    "store_delivery",
    "sweep_webhook_leases",
    "sync_webhooks",
    "wake_drain",
]
