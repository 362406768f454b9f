"""Handlers of the gateway's subscription routes, and the control that moves the fake's clock.

Routes from the official SDKs (univapay-node ``Subscriptions.ts``); the rules behind them
are :mod:`.subscriptions`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from ..client.params import fields_from_wire
from ..client.subscription_params import PlanSimulationParams
from ..client.subscription_vocabulary import CANCEL, CHANGE_TOKEN, SUSPEND, UNSUSPEND
from ..exceptions import InvalidParametersError
from .basics import ApiError, iso, validation_error
from .listing import page_of, parse_page_query
from .messages import Request
from .subscription_records import SubscriptionRecord, due_date

if TYPE_CHECKING:
    from .app import FakeApp

_SIMULATED_CYCLES = 12  # an open-ended plan is simulated for a year of monthly payments


def _subscription(fake: FakeApp, request: Request) -> SubscriptionRecord:
    params = request.params
    return fake.state.subscription(request.credentials(), params["store"], params["subscription"])


def create_subscription(fake: FakeApp, request: Request) -> Any:
    """``POST /subscriptions``: ``unverified``; the first payment follows right after."""
    state = fake.state
    sub = state.create_subscription(request.credentials(), request.json())
    with state.lock:
        body = sub.to_json()
    request.after.append(lambda: state.later(state.start_subscription, sub.id))
    return 201, body


def list_subscriptions(fake: FakeApp, request: Request) -> Any:
    """``GET (/stores/{s})/subscriptions``."""
    store_id = request.params.get("store")
    app = request.credentials()
    store = fake.state.store_for(app, store_id) if store_id is not None else None
    return 200, fake.state.list_subscriptions(app, store, request.query)


def get_subscription(fake: FakeApp, request: Request) -> Any:
    """``GET .../subscriptions/{id}`` (``polling=true`` is accepted; the fake answers at once)."""
    sub = _subscription(fake, request)
    with fake.state.lock:
        return 200, sub.to_json()


def _change(action: str) -> Any:
    def handler(fake: FakeApp, request: Request) -> Any:
        sub = _subscription(fake, request)
        body = request.optional_json()
        return 200, fake.state.change_subscription(sub, action, body)

    handler.__doc__ = f"``{action}`` a subscription, if its status allows it."
    return handler


suspend = _change(SUSPEND)
unsuspend = _change(UNSUSPEND)
change_token = _change(CHANGE_TOKEN)


def update(fake: FakeApp, request: Request) -> Any:
    """``PATCH .../subscriptions/{id}``: amount, metadata, settings; guarded changes."""
    sub = _subscription(fake, request)
    return 200, fake.state.update_subscription(sub, request.json())


def cancel(fake: FakeApp, request: Request) -> Any:
    """``DELETE .../subscriptions/{id}``: 204; canceled now, or at its next payment."""
    sub = _subscription(fake, request)
    fake.state.change_subscription(sub, CANCEL, request.optional_json())
    return 204, None


def list_payments(fake: FakeApp, request: Request) -> Any:
    """``GET .../payments``: the scheduled payments, paid and upcoming."""
    return 200, fake.state.list_payments(_subscription(fake, request), request.query)


def get_payment(fake: FakeApp, request: Request) -> Any:
    """``GET .../payments/{paymentId}``."""
    sub = _subscription(fake, request)
    with fake.state.lock:
        found = next((p for p in sub.payments if p.id == request.params["payment"]), None)
        if found is None:
            raise ApiError(404, "NOT_FOUND", [("paymentId", "NOT_FOUND")])
        return 200, found.to_json()


def list_charges(fake: FakeApp, request: Request) -> Any:
    """``GET .../charges``, or ``.../payments/{paymentId}/charges``: the charges of every
    payment of the subscription, or of the one."""
    sub = _subscription(fake, request)
    state = fake.state
    with state.lock:
        payments = sub.payments
        if "payment" in request.params:
            payments = [p for p in sub.payments if p.id == request.params["payment"]]
            if not payments:
                raise ApiError(404, "NOT_FOUND", [("paymentId", "NOT_FOUND")])
        ids = [cid for p in payments for cid in p.charge_ids]
        return 200, page_of(
            {cid: state.charges[cid] for cid in ids}, parse_page_query(request.query)
        )


def simulate_plan(fake: FakeApp, request: Request) -> Any:
    """``POST (/stores/{s})/subscriptions/simulate_plan``: the payments the plan would make."""
    if "store" in request.params:
        fake.state.store_for(request.credentials(), request.params["store"])
    try:
        checked = PlanSimulationParams(
            **fields_from_wire(PlanSimulationParams, request.json())
        ).to_body()
    except InvalidParametersError as exc:
        raise validation_error([(e.field, "INVALID_FORMAT") for e in exc.errors]) from None
    plan = checked.get("installment_plan") or {}
    cycles = int(plan.get("fixed_cycles") or _SIMULATED_CYCLES)
    schedule = checked.get("schedule_settings") or {}
    zone = schedule.get("zone_id", "Asia/Tokyo")
    first = dt.date.fromisoformat(schedule.get("start_on") or fake.state.clock().date().isoformat())
    period, cyclical = checked.get("period"), checked.get("cyclical_period")
    payments = []
    for index in range(cycles):
        amount = checked.get("initial_amount") if index == 0 else None
        payments.append(
            {
                "due_date": due_date(first, index, period, cyclical).isoformat(),
                "zone_id": zone,
                "amount": amount or checked["amount"],
                "currency": checked["currency"],
                "is_paid": False,
                "is_last_payment": index == cycles - 1,
            }
        )
    return 200, payments


def move_clock(fake: FakeApp, request: Request) -> Any:
    """Control: ``POST /_fake/clock`` ``{"days": n, "seconds": s}`` moves the subscriptions' clock;
    ``GET`` reads it. Answers the time and how many payments were tried."""
    body = request.optional_json() if request.method == "POST" else {}
    days, seconds = body.get("days", 0), body.get("seconds", 0)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (days, seconds)):
        raise validation_error([("days", "MUST_BE_NON_NEGATIVE_INTEGER")])
    tried = fake.state.move_clock(dt.timedelta(days=days, seconds=seconds)) if body else 0
    return 200, {"now": iso(fake.state.clock()), "payments_tried": tried}
