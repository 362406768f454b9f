"""Parse subscriptions, scheduled payments and plan simulations, tolerantly.

The same tolerant reader as charges, with the readers of :mod:`.parsing`: only a
subscription's or a scheduled payment's ``id`` is required; every other field is
typed when it can be and ``None`` otherwise, while ``raw`` keeps what was sent.
Days (``due_date``, ``start_on``) are ``date``; a full time sent there gives its day.
"""

from __future__ import annotations

from typing import Any

from .parsing import (
    ShapeError,
    _bool,
    _date,
    _datetime,
    _decimal,
    _dict,
    _int,
    _object,
    _required_uuid,
    _text,
    _three_ds,
    _uuid,
)
from .subscription_types import (
    Plan,
    ScheduledPayment,
    ScheduleSettings,
    SimulatedPayment,
    Subscription,
)
from .types import JSONObject

__all__ = [
    "parse_scheduled_payment",
    "parse_simulation",
    "parse_subscription",
]


def _schedule_settings(value: Any) -> ScheduleSettings | None:
    d = _dict(value)
    if d is None:
        return None
    g = d.get
    return ScheduleSettings(
        start_on=_date(g("start_on")),
        zone_id=_text(g("zone_id")),
        preserve_end_of_month=_bool(g("preserve_end_of_month")),
        retry_interval=_text(g("retry_interval")),
        termination_mode=_text(g("termination_mode")),
        raw=d,
    )


def _plan(value: Any) -> Plan | None:
    d = _dict(value)
    if d is None:
        return None
    g = d.get
    return Plan(
        plan_type=_text(g("plan_type")),
        fixed_cycles=_int(g("fixed_cycles")),
        fixed_cycle_amount=_int(g("fixed_cycle_amount")),
        raw=d,
    )


def parse_scheduled_payment(value: Any) -> ScheduledPayment:
    """A :class:`ScheduledPayment` from the decoded JSON of one (only ``id`` is required)."""
    d = _object(value, "the scheduled payment")
    g = d.get
    return ScheduledPayment(
        id=_required_uuid(g("id"), "id"),
        due_date=_date(g("due_date")),
        zone_id=_text(g("zone_id")),
        amount=_int(g("amount")),
        amount_formatted=_decimal(g("amount_formatted")),
        currency=_text(g("currency")),
        is_paid=_bool(g("is_paid")),
        is_last_payment=_bool(g("is_last_payment")),
        created_on=_datetime(g("created_on")),
        updated_on=_datetime(g("updated_on")),
        successful_payment_date=_date(g("successful_payment_date")),
        terminate_with_status=_text(g("terminate_with_status")),
        retry_date=_date(g("retry_date")),
        raw=d,
    )


def _next_payment(value: Any) -> ScheduledPayment | None:
    """The embedded next payment, or ``None`` when it cannot be read (it never sinks its
    subscription)."""
    try:
        return parse_scheduled_payment(value) if type(value) is dict else None
    except ShapeError:
        return None


def _amounts(g: Any) -> dict[str, Any]:
    return {
        "amount": _int(g("amount")),
        "amount_formatted": _decimal(g("amount_formatted")),
        "amount_left": _int(g("amount_left")),
        "amount_left_formatted": _decimal(g("amount_left_formatted")),
        "initial_amount": _int(g("initial_amount")),
        "initial_amount_formatted": _decimal(g("initial_amount_formatted")),
        "currency": _text(g("currency")),
        "payments_left": _int(g("payments_left")),
        "cycles_left": _int(g("cycles_left")),
    }


def parse_subscription(value: Any) -> Subscription:
    """A :class:`Subscription` from the decoded JSON of one (only ``id`` is required)."""
    d: JSONObject = _object(value, "the subscription")
    g = d.get
    three_ds = g("three_ds")
    return Subscription(
        id=_required_uuid(g("id"), "id"),
        store_id=_uuid(g("store_id")),
        transaction_token_id=_uuid(g("transaction_token_id")),
        mode=_text(g("mode")),
        status=_text(g("status")),
        **_amounts(g),
        period=_text(g("period")),
        cyclical_period=_text(g("cyclical_period")),
        descriptor=_text(g("descriptor")),
        only_direct_currency=_bool(g("only_direct_currency")),
        first_charge_authorization_only=_bool(g("first_charge_authorization_only")),
        first_charge_capture_after=_text(g("first_charge_capture_after")),
        installment_plan=_plan(g("installment_plan")),
        subscription_plan=_plan(g("subscription_plan")),
        schedule_settings=_schedule_settings(g("schedule_settings")),
        next_payment=_next_payment(g("next_payment")),
        three_ds=_three_ds(three_ds) if type(three_ds) is dict else None,
        metadata=_dict(g("metadata")),
        created_on=_datetime(g("created_on")),
        updated_on=_datetime(g("updated_on")),
        raw=d,
    )


def _simulated(value: Any) -> SimulatedPayment | None:
    d = _dict(value)
    if d is None:
        return None
    g = d.get
    return SimulatedPayment(
        due_date=_date(g("due_date")),
        zone_id=_text(g("zone_id")),
        amount=_int(g("amount")),
        currency=_text(g("currency")),
        is_paid=_bool(g("is_paid")),
        is_last_payment=_bool(g("is_last_payment")),
        raw=d,
    )


def parse_simulation(value: Any) -> tuple[SimulatedPayment, ...]:
    """The payments of a plan simulation, in order.

    The Node SDK types the answer as a list, and also as an object keyed by index
    (``{"0": {...}, "1": {...}}``); both are read. Items that are not objects are left out.
    """
    if type(value) is dict:
        keys = sorted(value, key=lambda k: (_int(k) is None, _int(k) or 0, str(k)))
        items = [value[k] for k in keys]
    elif type(value) is list:
        items = value
    else:
        raise ShapeError("the plan simulation is neither a list nor a JSON object")
    return tuple(p for p in map(_simulated, items) if p is not None)
