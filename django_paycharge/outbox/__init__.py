"""The outbox, below the mirror: changes announced at least once, and the leases it runs on.

A change the shop may act on is recorded with the change (:func:`send`) and
handed to each receiver after the commit until it returns; webhook deliveries
and announcements are claimed under the same leases (:mod:`.leases`). The
services call it; it calls only the queue adapter, the models and below.
"""

from __future__ import annotations

from .announcements import (
    RETRY_BASE,
    backoff,
    count_not_heard,
    dismiss_announcements,
    dispatch_announcement,
    due_announcements,
    hear,
    hear_announcement,
    hear_announcements,
    hear_due,
    next_announcement_due,
    prune_announcements,
    sweep_announcement_leases,
    sweep_announcements,
)
from .leases import (
    MAX_ATTEMPTS,
    Heartbeat,
    claim,
    claim_many,
    claim_next,
    claimant,
    finish,
    finish_many,
    give_up_exhausted,
    hold,
    next_expiry,
    release,
    stuck,
    waiting,
)
from .send import send, send_all

__all__ = [
    "MAX_ATTEMPTS",
    "RETRY_BASE",
    "Heartbeat",
    "backoff",
    "claim",
    "claim_many",
    "claim_next",
    "claimant",
    "count_not_heard",
    "dismiss_announcements",
    "dispatch_announcement",
    "due_announcements",
    "finish",
    "finish_many",
    "give_up_exhausted",
    "hear",
    "hear_announcement",
    "hear_announcements",
    "hear_due",
    "hold",
    "next_announcement_due",
    "next_expiry",
    "prune_announcements",
    "release",
    "send",
    "send_all",
    "stuck",
    "sweep_announcement_leases",
    "sweep_announcements",
    "waiting",
]
