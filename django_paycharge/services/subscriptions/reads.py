"""Read a subscription's scheduled payments (mirrored) and simulate a plan (not stored)."""

from __future__ import annotations

from typing import Any

from ... import conf
from ...client.subscription_params import PlanSimulationParams
from ...client.subscription_types import SimulatedPayment
from ...client.types import Rejected
from ...models import ScheduledPayment, Subscription
from ..clients import get_client
from ..mirror import store_scheduled_payments, subscription_place


def scheduled_payments(subscription: Subscription) -> list[ScheduledPayment]:
    """The subscription's scheduled payments read from the gateway and mirrored, by due date.

    A payment that cannot be read (no usable id) is quarantined, never lost.
    """
    rejected: list[Rejected] = []
    name, sub_id, store = subscription_place(
        subscription.gateway_id, subscription.store_id, subscription.account
    )
    listed = get_client(name).subscriptions.payments(store, sub_id, rejected=rejected)
    store_scheduled_payments(subscription, list(listed), rejected)
    return list(subscription.scheduled_payments.order_by("due_date", "id"))


def simulate_plan(
    params: PlanSimulationParams | None = None,
    /,
    *,
    account: str | None = None,
    **fields: Any,
) -> tuple[SimulatedPayment, ...]:
    """The payments a plan would make (checked locally first); nothing is stored."""
    name = account or conf.DEFAULT_ACCOUNT
    given = params if params is not None else PlanSimulationParams(**fields)
    store = conf.get_account(name).store_id
    return get_client(name).subscriptions.simulate_plan(given, store_id=store)
