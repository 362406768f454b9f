"""Subscriptions: create one and change it (suspend, resume, cancel, a new card) exactly once,
read its scheduled payments, simulate a plan.

Every request goes through the one exactly-once machine (:mod:`..lifecycle.exactly_once`)
with a kind of its own (:mod:`.kinds`); the mirror's one writer stores what the gateway
answers. Other flows import only the names below.
"""

from __future__ import annotations

from .changes import (
    cancel_subscription,
    change_subscription_card,
    resume_subscription,
    suspend_subscription,
    update_subscription,
)
from .create import create_subscription
from .kinds import KINDS, SubscriptionKind
from .reads import (
    refresh_returned_charge,
    scheduled_payments,
    simulate_plan,
    subscription_first_charge,
)

__all__ = [
    "KINDS",
    "SubscriptionKind",
    "cancel_subscription",
    "change_subscription_card",
    "create_subscription",
    "refresh_returned_charge",
    "resume_subscription",
    "scheduled_payments",
    "simulate_plan",
    "subscription_first_charge",
    "suspend_subscription",
    "update_subscription",
]
