"""Read a subscription's scheduled payments (mirrored) and its first charge, the charge a
customer came back with and its subscription, and simulate a plan (not stored)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from ... import conf
from ...client.subscription_params import PlanSimulationParams
from ...client.subscription_types import SimulatedPayment
from ...client.types import Rejected
from ...exceptions import PayChargeError
from ...models import Charge, ScheduledPayment, Subscription
from ..clients import get_client
from ..mirror import (
    WAIT_BACKOFF,
    refresh_charge,
    refresh_subscription,
    store_remote_charge,
    store_scheduled_payments,
    subscription_place,
    wait_for_charge,
)

logger = logging.getLogger("django_paycharge.services")


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


def subscription_first_charge(
    subscription: Subscription,
    *,
    timeout: float = 20.0,
    sleep: Callable[[float], object] = time.sleep,
) -> Charge | None:
    """The subscription's first charge, mirrored, once it has left ``pending`` (or when
    ``timeout`` seconds have passed); None if the gateway lists none by then.

    As the SDKs' ``pollSubscriptionWithFirstCharge``: the subscription's charges are read
    until one is listed, then that charge is waited for (:func:`wait_for_charge`). Where
    the customer goes next depends on it: a card ``awaiting`` 3-D Secure goes to the
    payment page (``paycharge:pay``), a konbini payment to its instructions. A charge that
    has settled brings its subscription's new status, read before the charge is stored:
    a receiver that hears the payment finds the subscription current. Reads only; the
    gateway's errors are raised (the subscription exists whatever a read says).
    """
    name, sub_id, store = subscription_place(
        subscription.gateway_id, subscription.store_id, subscription.account
    )
    client = get_client(name)
    deadline = time.monotonic() + timeout
    pauses = 0
    while (
        remote := next(iter(client.subscriptions.charges(store, sub_id, limit=10)), None)
    ) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sleep(min(WAIT_BACKOFF.delay(pauses), left))  # the pauses of waiting for a charge
        pauses += 1
    if remote.status != "pending":
        refresh_subscription(sub_id, store, account=name)
        return store_remote_charge(remote, account=name)
    charge = store_remote_charge(remote, account=name)
    left = deadline - time.monotonic()
    charge = wait_for_charge(charge, timeout=left, sleep=sleep) if left > 0 else charge
    if charge.status != "pending":
        refresh_subscription(sub_id, store, account=name)
    return charge


def refresh_returned_charge(
    charge_id: uuid.UUID | str,
    store_id: uuid.UUID | str | None = None,
    *,
    account: str | None = None,
) -> Charge:
    """The charge a customer came back with (a wallet's or 3-D Secure's return), read from
    the gateway and mirrored; a subscription's charge (its first payment) brings its
    subscription's new status too, read first, so a receiver hearing the payment and the
    page the customer lands on find it current.

    The charge's errors are raised, as :func:`refresh_charge`'s; the subscription's read
    is only logged when it fails: its webhook brings it as well.
    """
    local = Charge.objects.filter(gateway_id=uuid.UUID(str(charge_id))).first()
    if local is not None and local.subscription_id is not None:
        try:
            refresh_subscription(local.subscription_id, local.store_id, account=local.account)
        except PayChargeError as exc:
            logger.warning(
                "Subscription %s of returned charge %s not read: %s",
                local.subscription_id,
                local.gateway_id,
                type(exc).__name__,
            )
    return refresh_charge(charge_id, store_id, account=account)
