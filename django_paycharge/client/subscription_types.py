"""Typed results of subscriptions: the subscription, its plans and schedule, its payments.

Like :mod:`django_paycharge.client.types`: frozen dataclasses that keep the JSON
object they were built from as ``raw``; only a resource's own ``id`` is required,
and any other field the gateway did not send (or sent in a shape we cannot type)
is ``None`` and stays in ``raw``. Statuses, periods and plan types stay plain
``str``; their vocabulary is :mod:`.subscription_vocabulary`. Durations
(``cyclical_period``, ``retry_interval``, ``first_charge_capture_after``) stay
ISO-8601 text (``P1M``): a month has no fixed length to turn into a ``timedelta``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from .types import JSONObject, ThreeDS


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """When a subscription charges: its first day, time zone, retries and how it ends."""

    start_on: date | None
    zone_id: str | None
    preserve_end_of_month: bool | None
    retry_interval: str | None
    termination_mode: str | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Plan:
    """An ``installment_plan`` or ``subscription_plan``: its type and its count or amount."""

    plan_type: str | None
    fixed_cycles: int | None
    fixed_cycle_amount: int | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ScheduledPayment:
    """One payment of a subscription's schedule (``GET .../subscriptions/{id}/payments``).

    A plan simulation's payments have no ``id``: :func:`.subscription_parsing.parse_simulation`
    returns them as :class:`SimulatedPayment`.
    """

    id: uuid.UUID
    due_date: date | None
    zone_id: str | None
    amount: int | None
    amount_formatted: Decimal | None
    currency: str | None
    is_paid: bool | None
    is_last_payment: bool | None
    created_on: datetime | None
    updated_on: datetime | None
    successful_payment_date: date | None
    terminate_with_status: str | None
    retry_date: date | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SimulatedPayment:
    """One payment of a plan simulation (``POST /subscriptions/simulate_plan``)."""

    due_date: date | None
    zone_id: str | None
    amount: int | None
    currency: str | None
    is_paid: bool | None
    is_last_payment: bool | None
    raw: JSONObject = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Subscription:
    """A subscription, as returned by create, retrieve, the lists and its changes."""

    id: uuid.UUID
    store_id: uuid.UUID | None
    transaction_token_id: uuid.UUID | None
    mode: str | None
    status: str | None
    amount: int | None
    amount_formatted: Decimal | None
    amount_left: int | None
    amount_left_formatted: Decimal | None
    initial_amount: int | None
    initial_amount_formatted: Decimal | None
    currency: str | None
    payments_left: int | None
    cycles_left: int | None
    period: str | None
    cyclical_period: str | None
    descriptor: str | None
    only_direct_currency: bool | None
    first_charge_authorization_only: bool | None
    first_charge_capture_after: str | None
    installment_plan: Plan | None
    subscription_plan: Plan | None
    schedule_settings: ScheduleSettings | None
    next_payment: ScheduledPayment | None
    three_ds: ThreeDS | None
    metadata: JSONObject | None
    created_on: datetime | None
    updated_on: datetime | None
    raw: JSONObject = field(repr=False, compare=False)
