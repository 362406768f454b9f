"""Deliveries: webhook deliveries received and processed, announcements heard, their leases.

Both are at least once under a lease; the webhook configurations are mirrored
here too. Other flows import only the names below.
"""

from __future__ import annotations

# The modules too: the background machinery and the admin drive deliveries,
# announcements and their leases step by step.
from . import announcements, deliveries, leases
from .configs import (
    configured_tokens,
    delivery_token_matches,
    matches_auth_token,
    sync_webhooks,
)
from .deliveries import process_delivery, store_delivery

__all__ = [
    "announcements",
    "configured_tokens",
    "deliveries",
    "delivery_token_matches",
    "leases",
    "matches_auth_token",
    "process_delivery",
    "store_delivery",
    "sync_webhooks",
]
